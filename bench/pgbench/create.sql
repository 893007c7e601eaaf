-- The service's create (src/infrastructure/pets/typeorm-pet-repository.ts): a plain INSERT, on
-- pgbench_pets (the triggers of issue 52) or pgbench_pets_before (issue 44's), as run.sh picks.
INSERT INTO pets (name, category_id, status) VALUES ('Rex', 1, 'available') RETURNING id;
