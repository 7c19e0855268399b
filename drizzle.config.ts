import { defineConfig } from "drizzle-kit";

export default defineConfig({
  dialect: "postgresql",
  schema: "./services/db/schema/index.ts",
  out: "./services/db/migrations",
});
