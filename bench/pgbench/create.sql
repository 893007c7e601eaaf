-- The service's create (src/infrastructure/pets/typeorm-pet-repository.ts), on the service's table: a plain INSERT
-- whose id is drawn under the pets lock, taken shared by the table's trigger (since issue 44).
INSERT INTO pets (name, category_id, status) VALUES ('Rex', 1, 'available') RETURNING id;
