-- Screenshots in an object store (issue 9): with -media-store=s3 a media
-- row keeps the object's key and no bytes. A row whose upload failed keeps
-- its bytes as before, so every row has one or the other.

-- +goose Up
ALTER TABLE media ALTER COLUMN data DROP NOT NULL;
ALTER TABLE media ADD COLUMN object_key text;
ALTER TABLE media ADD CONSTRAINT media_data_or_object
    CHECK (data IS NOT NULL OR object_key IS NOT NULL);

-- +goose Down
-- Refused (NOT NULL fails) while any row lives only in the object store:
-- copy those objects back into data first.
ALTER TABLE media ALTER COLUMN data SET NOT NULL;
ALTER TABLE media DROP CONSTRAINT media_data_or_object;
ALTER TABLE media DROP COLUMN object_key;
