/**
 * A real Dovecot IMAP server for tests: started on free loopback ports with a private configuration in
 * a temp dir (a passwd-file user, maildirs in the temp dir, no system paths), as the current user.
 * Plain-text login is allowed (loopback only). `imaps` (implicit TLS) and STARTTLS on `imap` use a
 * self-signed certificate for CN=localhost, whose PEM the caller trusts explicitly.
 *
 * XOAUTH2: when `oauth2IntrospectionUrl` is given, a second passdb checks bearer tokens by POSTing them
 * to that URL (an HTTP server on loopback the test runs), as Dovecot does against a real provider.
 */
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { selfSignedCert } from "./tls.ts";

export interface Dovecot {
  host: string;
  /** plain IMAP (STARTTLS offered) */
  port: number;
  /** implicit TLS */
  tlsPort: number;
  user: string;
  password: string;
  /** the self-signed certificate the server presents, PEM */
  certPem: string;
  dir: string;
  /** the user's maildir */
  maildir: string;
  stop(): Promise<void>;
}

/** A free TCP port on 127.0.0.1 (bound and released; the usual tiny race is accepted in tests). */
export async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export function dovecotAvailable(): boolean {
  return Bun.which("dovecot", { PATH: `${process.env.PATH}:/usr/sbin` }) !== null;
}

export async function startDovecot(
  opts: { oauth2IntrospectionUrl?: string; idle?: boolean } = {},
): Promise<Dovecot> {
  const dir = mkdtempSync(join(tmpdir(), "mh-dovecot-"));
  const port = await freePort();
  const tlsPort = await freePort();
  const user = "alice";
  const password = "alice-secret";
  const { cert, key } = selfSignedCert();
  // Dovecot never accesses mail as root: under root the mail belongs to the package's dovecot user.
  const root = (process.getuid?.() ?? 0) === 0;
  const uid = root ? Number(idOf("-u", "dovecot")) : (process.getuid?.() ?? 0);
  const gid = root ? Number(idOf("-g", "dovecot")) : (process.getgid?.() ?? 0);
  // Dovecot's login processes refuse to run as root: under root they run as the package's dovenull.
  const me = idOf("-un");
  const group = idOf("-gn");
  for (const d of ["run", "state", "home", "mail"]) mkdirSync(join(dir, d), { recursive: true });
  writeFileSync(join(dir, "passwd"), `${user}:{PLAIN}${password}:${uid}:${gid}::${join(dir, "home")}::\n`);
  const oauth = opts.oauth2IntrospectionUrl
    ? `passdb {
  driver = oauth2
  mechanisms = xoauth2
  args = ${join(dir, "oauth2.conf")}
}
`
    : "";
  if (opts.oauth2IntrospectionUrl) {
    writeFileSync(
      join(dir, "oauth2.conf"),
      `introspection_mode = post\nintrospection_url = ${opts.oauth2IntrospectionUrl}\nusername_attribute = username\nactive_attribute = active\nactive_value = true\n`,
    );
  }
  const conf = `
base_dir = ${join(dir, "run")}
state_dir = ${join(dir, "state")}
instance_name = mh-${port}
log_path = ${join(dir, "dovecot.log")}
protocols = imap
listen = 127.0.0.1
default_internal_user = ${me}
default_internal_group = ${group}
default_login_user = ${root ? "dovenull" : me}
first_valid_uid = 0
first_valid_gid = 0
disable_plaintext_auth = no
# tests log in wrongly on purpose: no growing penalty or delay for failed logins
auth_failure_delay = 0
login_trusted_networks = 127.0.0.0/8
auth_mechanisms = plain login${opts.oauth2IntrospectionUrl ? " xoauth2" : ""}
ssl = yes
ssl_cert = <${cert}
ssl_key = <${key}
mail_location = maildir:${join(dir, "mail")}/%u
mail_uid = ${uid}
mail_gid = ${gid}
${opts.idle === false ? "imap_capability = IMAP4rev1 LITERAL+ SASL-IR LOGIN-REFERRALS ID ENABLE SORT UIDPLUS" : ""}
${oauth}passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%u ${join(dir, "passwd")}
}
userdb {
  driver = static
  args = uid=${uid} gid=${gid} home=${join(dir, "home")}/%u
}
service imap-login {
  chroot =
  inet_listener imap {
    address = 127.0.0.1
    port = ${port}
  }
  inet_listener imaps {
    address = 127.0.0.1
    port = ${tlsPort}
    ssl = yes
  }
}
service anvil {
  chroot =
}
service stats {
  unix_listener stats-reader {
    mode = 0600
  }
  unix_listener stats-writer {
    mode = 0600
  }
}
`;
  const confPath = join(dir, "dovecot.conf");
  if (root) {
    chmodSync(dir, 0o755);
    for (const d of ["home", "mail"]) chownSync(join(dir, d), uid, gid);
  }
  writeFileSync(confPath, conf);
  const dovecot = Bun.which("dovecot", { PATH: `${process.env.PATH}:/usr/sbin` }) ?? "/usr/sbin/dovecot";
  const proc: Subprocess = Bun.spawn([dovecot, "-F", "-c", confPath], { stdout: "pipe", stderr: "pipe" });
  // never outlive the test process, even when it ends without stopping the server
  const orphanGuard = () => proc.kill("SIGKILL");
  process.once("exit", orphanGuard);
  // generous: on a loaded machine Dovecot can take several seconds to start
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (await accepts(port)) break;
    if (proc.exitCode !== null || Date.now() > deadline) {
      let log = "";
      try {
        log = readFileSync(join(dir, "dovecot.log"), "utf8");
      } catch {}
      const err = proc.stderr instanceof ReadableStream ? await new Response(proc.stderr).text() : "";
      proc.kill();
      throw new Error(`dovecot did not start: ${err}\n${log}`);
    }
    await Bun.sleep(50);
  }
  return {
    host: "127.0.0.1",
    port,
    tlsPort,
    user,
    password,
    certPem: readFileSync(cert, "utf8"),
    dir,
    maildir: join(dir, "mail", user),
    async stop() {
      process.off("exit", orphanGuard);
      proc.kill("SIGTERM");
      await proc.exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function idOf(...args: string[]): string {
  return Bun.spawnSync(["id", ...args])
    .stdout.toString()
    .trim();
}

async function accepts(port: number): Promise<boolean> {
  try {
    const socket = await Bun.connect({ hostname: "127.0.0.1", port, socket: { data() {} } });
    socket.end();
    return true;
  } catch {
    return false;
  }
}
