/**
 * An intake-only mailhook process (API + SMTP, no delivery worker) for the scale-out suite, so the
 * delivery rate it measures comes from the `worker` processes alone. Same config and bootstrap as
 * `bun services/main.ts serve`; stops on SIGTERM.
 */
import { bootstrap } from "../../services/bootstrap.ts";
import { loadConfig } from "../../services/config.ts";
import { startRoles } from "../../services/roles.ts";

const ctx = await bootstrap(loadConfig());
const roles = await startRoles(ctx, ["api", "smtp"]);
process.on("SIGTERM", () => {
  void roles.stop().then(async () => {
    await ctx.database.close();
    process.exit(0);
  });
});
