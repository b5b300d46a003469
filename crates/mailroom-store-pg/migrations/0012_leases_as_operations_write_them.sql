-- Strict mode, leases: a role takes or renews a lease only as mailroom's own operations write
-- one. Migration 0010 checked only that the role may act as `holder_key`, which let it list
-- another agent as the lease's holder (`holder`, the name every reader is shown), take a lease
-- in a project that is not its holder's, or hold one for years. Now the holder as written is
-- the holder it acts as, the project is that holder's own (HUMAN's: any), and a lease ends at
-- most a day after the database's clock says now (and an hour more, for a client's clock
-- running ahead): `reserve` bounds a lease to a day, and reserving again renews it.
DROP POLICY take ON leases;
DROP POLICY renew ON leases;
CREATE POLICY take ON leases FOR INSERT WITH CHECK (
    mailroom_mine(holder_key)
    AND lower(holder) = holder_key
    AND (holder_key = 'human' OR split_part(holder_key, '@', 2) = project_key)
    AND until <= extract(epoch FROM now()) + 90000
);
CREATE POLICY renew ON leases FOR UPDATE USING (mailroom_mine(holder_key)) WITH CHECK (
    mailroom_mine(holder_key)
    AND lower(holder) = holder_key
    AND (holder_key = 'human' OR split_part(holder_key, '@', 2) = project_key)
    AND until <= extract(epoch FROM now()) + 90000
);
