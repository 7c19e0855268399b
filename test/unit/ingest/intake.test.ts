// The intake seam without a database: recipient resolution and its cache, the fan-out per project,
// failure aggregation, and the SMTP rendering of an outcome. Lookup and ingest are injected.
import { describe, expect, test } from "bun:test";
import { noAuth } from "../../../mapper/types.ts";
import { loadConfig } from "../../../services/config.ts";
import type { AppContext } from "../../../services/context.ts";
import type { IngestInput, IngestResult } from "../../../services/ingest/ingest.ts";
import {
  groupByProject,
  Intake,
  type IntakeOutcome,
  isTransient,
  RecipientDirectory,
} from "../../../services/ingest/intake.ts";
import { SmtpReplyError, smtpReplyFor, smtpReplyTo } from "../../../services/ingest/smtp-replies.ts";
import { AppError, type ErrorCode } from "../../../services/lib/errors.ts";

/** The configuration, and the recipient change counter of the intake state. */
const changes = {
  generation: 0,
  bump() {
    this.generation++;
  },
};
const ctx = { config: loadConfig({}), ingest: { recipientChanges: changes } } as unknown as AppContext;

/** A project directory the test edits, counting lookups. */
function projects(initial: Record<string, string>) {
  const owners = new Map(Object.entries(initial));
  const lookups: string[] = [];
  return {
    owners,
    lookups,
    lookup: async (address: string) => {
      lookups.push(address);
      const id = owners.get(address.toLowerCase());
      return id ? { id } : null;
    },
  };
}

/** A clock in milliseconds the test moves. */
function clock(start = 1_000_000) {
  let t = start;
  return {
    now: () => t,
    advance(ms: number) {
      t += ms;
    },
  };
}

/** An ingest that records its inputs and fails for the projects given. */
function recordingIngest(failFor: Record<string, unknown> = {}) {
  const inputs: IngestInput[] = [];
  const ingest = async (_ctx: AppContext, input: IngestInput): Promise<IngestResult> => {
    inputs.push(input);
    if (input.projectId in failFor) throw failFor[input.projectId];
    return { messagePk: `msg_${input.projectId}`, messageId: "<m@x>", duplicate: false, events: [] };
  };
  return { inputs, ingest };
}

const raw = new TextEncoder().encode("Subject: hi\r\n\r\nbody\r\n");

describe("RecipientDirectory", () => {
  test("resolves an address case-insensitively and answers repeats from its cache", async () => {
    const p = projects({ "a@in.test": "prj_a" });
    const dir = new RecipientDirectory(ctx, { lookup: p.lookup });
    expect(await dir.projectOf("a@in.test")).toBe("prj_a");
    expect(await dir.projectOf("A@IN.TEST")).toBe("prj_a");
    expect(p.lookups).toEqual(["a@in.test"]);
  });

  test("never caches a miss, so a new project is reachable at once", async () => {
    const p = projects({});
    const dir = new RecipientDirectory(ctx, { lookup: p.lookup });
    expect(await dir.projectOf("new@in.test")).toBeNull();
    p.owners.set("new@in.test", "prj_new");
    expect(await dir.projectOf("new@in.test")).toBe("prj_new");
    expect(p.lookups).toHaveLength(2);
  });

  test("looks an address up again once its entry is older than the TTL", async () => {
    const p = projects({ "a@in.test": "prj_a" });
    const t = clock();
    const dir = new RecipientDirectory(ctx, { lookup: p.lookup, now: t.now, ttlMs: 10_000 });
    await dir.projectOf("a@in.test");
    t.advance(9_999);
    await dir.projectOf("a@in.test");
    expect(p.lookups).toHaveLength(1);
    t.advance(1);
    p.owners.delete("a@in.test"); // the project was deleted meanwhile
    expect(await dir.projectOf("a@in.test")).toBeNull();
    expect(p.lookups).toHaveLength(2);
  });

  test("drops its cached hits when an address changed owner in the process", async () => {
    const p = projects({ "a@example.com": "prj_a" });
    const dir = new RecipientDirectory(ctx, { lookup: p.lookup });
    expect(await dir.projectOf("a@example.com")).toBe("prj_a");
    expect(await dir.projectOf("a@example.com")).toBe("prj_a");
    expect(p.lookups).toHaveLength(1);
    p.owners.delete("a@example.com"); // the address was deleted, and the deletion counted
    changes.bump();
    expect(await dir.projectOf("a@example.com")).toBeNull();
    expect(p.lookups).toHaveLength(2);
  });

  test("when full, empties its cache instead of growing", async () => {
    const p = projects({ "a@in.test": "prj_a", "b@in.test": "prj_b", "c@in.test": "prj_c" });
    const dir = new RecipientDirectory(ctx, { lookup: p.lookup, maxEntries: 2 });
    for (const address of ["a@in.test", "b@in.test", "c@in.test", "a@in.test", "c@in.test"]) {
      await dir.projectOf(address);
    }
    // c's insert found the cache full (a, b) and emptied it: a is looked up again, c is not.
    expect(p.lookups).toEqual(["a@in.test", "b@in.test", "c@in.test", "a@in.test"]);
  });

  test("each directory has its own cache", async () => {
    const p = projects({ "a@in.test": "prj_a" });
    await new RecipientDirectory(ctx, { lookup: p.lookup }).projectOf("a@in.test");
    await new RecipientDirectory(ctx, { lookup: p.lookup }).projectOf("a@in.test");
    expect(p.lookups).toHaveLength(2);
  });

  test("a failing lookup rejects and caches nothing", async () => {
    let fail = true;
    const dir = new RecipientDirectory(ctx, {
      lookup: async () => {
        if (fail) throw new Error("database down");
        return { id: "prj_a" };
      },
    });
    await expect(dir.projectOf("a@in.test")).rejects.toThrow("database down");
    fail = false;
    expect(await dir.projectOf("a@in.test")).toBe("prj_a");
  });

  test("groups recipients per project, looking each distinct address up once", async () => {
    const p = projects({ "a@in.test": "prj_a", "a+x@in.test": "prj_a", "b@in.test": "prj_b" });
    const dir = new RecipientDirectory(ctx, { lookup: p.lookup });
    const grouped = await dir.group(["a@in.test", "b@in.test", "nobody@in.test", "a+x@in.test", "b@in.test"]);
    expect([...grouped.byProject]).toEqual([
      ["prj_a", ["a@in.test", "a+x@in.test"]],
      ["prj_b", ["b@in.test", "b@in.test"]],
    ]);
    expect(grouped.unknown).toEqual(["nobody@in.test"]);
    expect(p.lookups).toEqual(["a@in.test", "b@in.test", "nobody@in.test", "a+x@in.test"]);
  });
});

describe("groupByProject", () => {
  test.each([
    ["no recipients", [], {}, [], []],
    ["one project", ["a", "b"], { a: "p1", b: "p1" }, [["p1", ["a", "b"]]], []],
    [
      "two projects, first-seen order",
      ["b", "a", "c"],
      { a: "p1", b: "p2", c: "p1" },
      [
        ["p2", ["b"]],
        ["p1", ["a", "c"]],
      ],
      [],
    ],
    ["unknown recipients set apart", ["a", "x"], { a: "p1" }, [["p1", ["a"]]], ["x"]],
  ] as const)("%s", (_name, addresses, owners, byProject, unknown) => {
    const grouped = groupByProject(addresses, (a) => (owners as Record<string, string>)[a]);
    expect([...grouped.byProject]).toEqual(byProject as unknown as [string, string[]][]);
    expect(grouped.unknown).toEqual([...unknown]);
  });
});

describe("Intake", () => {
  test("a known project gets the message once, with the given envelope and the source's type", async () => {
    const rec = recordingIngest();
    const intake = new Intake(ctx, "api", { ingest: rec.ingest });
    const outcome = await intake.acceptForProject("prj_a", raw, null);
    expect(outcome).toEqual({
      accepted: [{ messagePk: "msg_prj_a", messageId: "<m@x>", duplicate: false, events: [] }],
      failures: [],
      failure: null,
      unknownRecipients: [],
    });
    expect(rec.inputs).toEqual([
      { projectId: "prj_a", raw, sourceType: "api", envelope: null, verdict: { auth: noAuth(), spam: null } },
    ]);
  });

  test("fans out once per project, each envelope naming only that project's recipients", async () => {
    const rec = recordingIngest();
    const intake = new Intake(ctx, "smtp", { ingest: rec.ingest });
    const byProject = new Map([
      ["prj_a", ["a@in.test", "a+x@in.test"]],
      ["prj_b", ["b@in.test"]],
    ]);
    const outcome = await intake.acceptForProjects(raw, byProject, "sender@example.com");
    expect(outcome.accepted.map((r) => r.messagePk)).toEqual(["msg_prj_a", "msg_prj_b"]);
    expect(rec.inputs.map((i) => [i.projectId, i.sourceType, i.envelope])).toEqual([
      ["prj_a", "smtp", { mail_from: "sender@example.com", rcpt_to: ["a@in.test", "a+x@in.test"] }],
      ["prj_b", "smtp", { mail_from: "sender@example.com", rcpt_to: ["b@in.test"] }],
    ]);
  });

  test("keeps the +tag of each project's first recipient in its envelope", async () => {
    const rec = recordingIngest();
    const intake = new Intake(ctx, "smtp", { ingest: rec.ingest });
    const byProject = new Map([
      ["prj_a", ["sales+EU-2024@example.com", "sales+other@example.com"]],
      ["prj_b", ["b@in.test", "b+x@in.test"]],
    ]);
    await intake.acceptForProjects(raw, byProject, "s@example.org");
    expect(rec.inputs.map((i) => i.envelope?.tag ?? null)).toEqual(["EU-2024", null]);
  });

  test("the sender is assessed once per message, from the SMTP client, and every project stores that verdict", async () => {
    const rec = recordingIngest();
    const asked: unknown[] = [];
    const verdict = {
      auth: { ...noAuth(), source: "smtp" as const },
      spam: { score: 1, action: "no action", symbols: [] },
    };
    const intake = new Intake(ctx, "smtp", {
      ingest: rec.ingest,
      assess: async (_raw, smtp) => {
        asked.push(smtp);
        return verdict;
      },
    });
    const byProject = new Map([
      ["prj_a", ["a@in.test"]],
      ["prj_b", ["b@in.test"]],
    ]);
    await intake.acceptForProjects(raw, byProject, "s@example.com", {
      ip: "192.0.2.1",
      helo: "mx.example.com",
    });
    expect(asked).toEqual([
      {
        ip: "192.0.2.1",
        helo: "mx.example.com",
        mailFrom: "s@example.com",
        rcptTo: ["a@in.test", "b@in.test"],
      },
    ]);
    expect(rec.inputs.map((i) => i.verdict)).toEqual([verdict, verdict]);
  });

  test("a spool file without kept bytes goes to several projects as a plain file (none may move it away)", async () => {
    const spooled = { path: "/spool/1.eml", size: 2_000_000, sha256: "ab".repeat(32) };
    const withBytes = { ...spooled, bytes: raw };
    for (const [given, projectCount, expected] of [
      [spooled, 2, { path: "/spool/1.eml", size: 2_000_000 }],
      [spooled, 1, spooled],
      [withBytes, 2, withBytes],
    ] as const) {
      const rec = recordingIngest();
      const intake = new Intake(ctx, "smtp", { ingest: rec.ingest });
      const byProject = new Map([...Array(projectCount).keys()].map((i) => [`prj_${i}`, [`r${i}@in.test`]]));
      await intake.acceptForProjects(given, byProject, "");
      for (const input of rec.inputs) expect(input.raw).toEqual(expected);
    }
  });

  test("tries every project after a failure; a transient failure decides over a permanent one", async () => {
    const quota = new AppError("ingest.quota_exceeded", "quota");
    const down = new Error("connection refused");
    const rec = recordingIngest({ prj_a: quota, prj_c: down });
    const intake = new Intake(ctx, "smtp", { ingest: rec.ingest });
    const byProject = new Map([
      ["prj_a", ["a@in.test"]],
      ["prj_b", ["b@in.test"]],
      ["prj_c", ["c@in.test"]],
    ]);
    const outcome = await intake.acceptForProjects(raw, byProject, "");
    expect(rec.inputs.map((i) => i.projectId)).toEqual(["prj_a", "prj_b", "prj_c"]);
    expect(outcome.accepted.map((r) => r.messagePk)).toEqual(["msg_prj_b"]);
    expect(outcome.failures).toEqual([
      { projectId: "prj_a", error: quota, transient: false },
      { projectId: "prj_c", error: down, transient: true },
    ]);
    expect(outcome.failure).toEqual({ projectId: "prj_c", error: down, transient: true });
  });

  test("with only permanent failures, the first one decides", async () => {
    const unparseable = new AppError("ingest.unparseable", "empty");
    const gone = new AppError("projects.not_found", "gone");
    const rec = recordingIngest({ prj_a: unparseable, prj_b: gone });
    const intake = new Intake(ctx, "smtp", { ingest: rec.ingest });
    const byProject = new Map([
      ["prj_a", ["a@in.test"]],
      ["prj_b", ["b@in.test"]],
    ]);
    const outcome = await intake.acceptForProjects(raw, byProject, "");
    expect(outcome.failure?.error).toBe(unparseable);
  });

  test("resolving recipients: unknown ones are reported, not ingested; known ones share the cache", async () => {
    const p = projects({ "a@in.test": "prj_a", "b@in.test": "prj_b" });
    const rec = recordingIngest();
    const intake = new Intake(ctx, "smtp", { ingest: rec.ingest, lookup: p.lookup });
    const outcome = await intake.acceptForRecipients(
      raw,
      ["a@in.test", "x@in.test", "b@in.test"],
      "s@example.com",
    );
    expect(outcome.accepted.map((r) => r.messagePk)).toEqual(["msg_prj_a", "msg_prj_b"]);
    expect(outcome.unknownRecipients).toEqual(["x@in.test"]);
    expect(outcome.failure).toBeNull();
    expect(await intake.recipients.projectOf("A@in.test")).toBe("prj_a");
    expect(p.lookups).toEqual(["a@in.test", "x@in.test", "b@in.test"]);
  });

  test("resolving recipients: a failing lookup rejects before anything is ingested", async () => {
    const rec = recordingIngest();
    const intake = new Intake(ctx, "smtp", {
      ingest: rec.ingest,
      lookup: async () => {
        throw new Error("database down");
      },
    });
    await expect(intake.acceptForRecipients(raw, ["a@in.test"], "")).rejects.toThrow("database down");
    expect(rec.inputs).toEqual([]);
  });
});

describe("the SMTP rendering of an outcome", () => {
  test.each([
    ["ingest.too_large", false, 552],
    ["ingest.quota_exceeded", false, 552],
    ["ingest.unparseable", false, 554],
    ["projects.not_found", false, 550],
    ["ingest.unavailable", true, 451],
    ["service.unavailable", true, 451],
    ["internal", true, 451],
    ["request.invalid", true, 451],
  ] as const)("%s: transient %p, answered %p", (code, transient, reply) => {
    const err = new AppError(code as ErrorCode, "x");
    expect(isTransient(err)).toBe(transient);
    expect(smtpReplyFor(err).responseCode).toBe(reply);
  });

  test("an unexpected error is transient and answered 451", () => {
    const err = new Error("boom");
    expect(isTransient(err)).toBe(true);
    expect(smtpReplyFor(err).responseCode).toBe(451);
  });

  test("every project took it: the 250 text names each stored message", () => {
    const outcome: IntakeOutcome = {
      accepted: [
        { messagePk: "msg_1", messageId: "<m@x>", duplicate: false, events: [] },
        { messagePk: "msg_2", messageId: "<m@x>", duplicate: true, events: [] },
      ],
      failures: [],
      failure: null,
      unknownRecipients: [],
    };
    expect(smtpReplyTo(outcome)).toBe("Ok: accepted as msg_1, msg_2");
  });

  test("a failure is thrown as the reply of the deciding one", () => {
    const failure = {
      projectId: "prj_a",
      error: new AppError("ingest.quota_exceeded", "q"),
      transient: false,
    };
    const outcome: IntakeOutcome = { accepted: [], failures: [failure], failure, unknownRecipients: [] };
    let thrown: unknown;
    try {
      smtpReplyTo(outcome);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(SmtpReplyError);
    expect((thrown as SmtpReplyError).responseCode).toBe(552);
    expect((thrown as SmtpReplyError).message).toBe("Mailbox storage quota exceeded");
  });
});
