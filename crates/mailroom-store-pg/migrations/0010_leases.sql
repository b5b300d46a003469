-- File reservations: advisory leases on repository paths, one row per lease. A change to a
-- project's leases runs in one transaction holding a transaction-scoped advisory lock on the
-- project, so two reservations never decide from the same rows.
CREATE TABLE leases (
    project_key text NOT NULL,
    id          text NOT NULL,
    holder      text NOT NULL,
    holder_key  text NOT NULL,
    pattern     text NOT NULL,
    exclusive   boolean NOT NULL,
    reason      text,
    since       bigint NOT NULL,
    until       bigint NOT NULL,
    PRIMARY KEY (project_key, id)
);

-- Strict mode: a role reads the leases of its projects, takes and renews only its own, and
-- releases its own, any when it may act as HUMAN, and anyone's expired lease.
ALTER TABLE leases ENABLE ROW LEVEL SECURITY;
CREATE POLICY read ON leases FOR SELECT USING (mailroom_in_project(project_key));
CREATE POLICY take ON leases FOR INSERT WITH CHECK (mailroom_mine(holder_key));
CREATE POLICY renew ON leases FOR UPDATE USING (mailroom_mine(holder_key)) WITH CHECK (mailroom_mine(holder_key));
CREATE POLICY release ON leases FOR DELETE
    USING (mailroom_mine(holder_key) OR mailroom_mine('human') OR until <= extract(epoch FROM now()));
