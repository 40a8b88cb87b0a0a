-- What a run's replay did (record and replay, issue 8): Run.replay, a
-- wayfinder.v1.ReplayReport as protojson; NULL for a run that asked for no
-- replay.

-- +goose Up
ALTER TABLE runs ADD COLUMN replay jsonb;

-- +goose Down
ALTER TABLE runs DROP COLUMN replay;
