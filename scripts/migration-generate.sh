#!/bin/sh
# npm run migration:generate -- <name>: brings the database up to date, then writes
# src/infrastructure/schema/migrations/<timestamp>-<name>.ts with what the records (*.record.ts) state
# and the database lacks, formatted, and lists it in src/infrastructure/schema/migrations.ts.
set -eu
name=${1:?usage: npm run migration:generate -- <name in kebab-case, e.g. add-pet-birthday>}
folder=src/infrastructure/schema/migrations

npm run build --silent
node dist/src/migrate.js
typeorm migration:generate -d dist/ormconfig.js --pretty "$folder/$name"

file=$(ls -t "$folder"/*-"$name".ts | head -n 1)
class=$(sed -n 's/^export class \([A-Za-z0-9_]*\).*/\1/p' "$file")
# The import goes after the last import (the first blank line), the class at the end of the list.
sed -i "0,/^\$/s//import { $class } from '.\/migrations\/$(basename "$file" .ts).js';\n/" src/infrastructure/schema/migrations.ts
sed -i "s/^];\$/  $class,\n];/" src/infrastructure/schema/migrations.ts
prettier --write --log-level warn "$file" src/infrastructure/schema/migrations.ts
eslint --fix "$file"
echo "Wrote $file and listed $class in src/infrastructure/schema/migrations.ts: read both, then npm run migration:run."
