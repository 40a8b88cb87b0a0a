-- The tenant event stream and webhook deliveries.
--
-- Every appended run event already wakes the streams of its run (store
-- appends NOTIFY wayfinder_run_events with the run ID). This trigger adds
-- two more wake-ups on the same channel, so the events hub of every replica
-- fans them out without a second LISTEN connection:
--   'tenant:<tenant ID>'  any event of one of the tenant's runs (StreamEvents);
--   'webhooks'            a FINISHED or APPROVAL_REQUESTED event of a run that
--                         names a webhook (the webhook dispatcher).
-- A wake-up is only a hint: readers read the events from the tables.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION wayfinder_notify_run_event() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    run_tenant  text;
    has_webhook boolean;
BEGIN
    SELECT tenant_id, params ? 'webhook' INTO run_tenant, has_webhook FROM runs WHERE id = NEW.run_id;
    PERFORM pg_notify('wayfinder_run_events', 'tenant:' || run_tenant);
    IF has_webhook AND NEW.type IN ('RUN_EVENT_TYPE_FINISHED', 'RUN_EVENT_TYPE_APPROVAL_REQUESTED') THEN
        PERFORM pg_notify('wayfinder_run_events', 'webhooks');
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER run_events_notify AFTER INSERT ON run_events
    FOR EACH ROW EXECUTE FUNCTION wayfinder_notify_run_event();

-- The tenant stream finds the runs that may have new events: live ones and
-- those that ended since its last look.
CREATE INDEX runs_tenant_live_idx ON runs (tenant_id) WHERE status IN ('queued', 'running', 'awaiting_approval');
CREATE INDEX runs_tenant_ended_idx ON runs (tenant_id, ended_at) WHERE ended_at IS NOT NULL;

-- The webhook dispatcher looks for recent events that call for a delivery.
CREATE INDEX run_events_webhook_idx ON run_events (created_at)
    WHERE type IN ('RUN_EVENT_TYPE_FINISHED', 'RUN_EVENT_TYPE_APPROVAL_REQUESTED');

-- The event a delivery reports (its sequence number), and for a redelivery
-- the delivery it repeats. An event has at most one original delivery, so
-- dispatchers on several replicas never send it twice.
ALTER TABLE webhook_deliveries
    ADD COLUMN event_seq     bigint NOT NULL DEFAULT 0,
    ADD COLUMN redelivery_of uuid;
CREATE UNIQUE INDEX webhook_deliveries_event_idx ON webhook_deliveries (run_id, event_seq)
    WHERE redelivery_of IS NULL;

-- +goose Down
DROP INDEX webhook_deliveries_event_idx;
ALTER TABLE webhook_deliveries DROP COLUMN redelivery_of, DROP COLUMN event_seq;
DROP INDEX run_events_webhook_idx;
DROP INDEX runs_tenant_ended_idx;
DROP INDEX runs_tenant_live_idx;
DROP TRIGGER run_events_notify ON run_events;
DROP FUNCTION wayfinder_notify_run_event();
