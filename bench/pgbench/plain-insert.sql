-- The obvious app's create, on its table (no trigger, no lock).
INSERT INTO pets (name, category_id, status) VALUES ('Rex', 1, 'available') RETURNING id;
