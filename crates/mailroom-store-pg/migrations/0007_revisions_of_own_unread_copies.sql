-- mailroom schema: in strict mode, a role keeps an earlier revision only of a copy it sent that
-- is still unread, which is when an edit keeps one.
--
-- Version 2 let a role insert any revision row naming itself as the sender, into any mailbox and
-- under any message id: a "revision" of someone else's message, or of its own long after it was
-- read. Nothing showed them, but `export` copies revisions into the target (a file home gets a
-- `revisions/` file in the victim's mailbox). Writing an export's revisions is the owner's, who
-- is not subject to these policies.

DROP POLICY keep ON revisions;
CREATE POLICY keep ON revisions FOR INSERT WITH CHECK (
    mailroom_mine(sender) AND EXISTS (
        SELECT 1 FROM copies c
        WHERE c.mailbox = revisions.mailbox AND c.id = revisions.id
          AND c.sender = revisions.sender AND c.state = 'unread'
    )
);
