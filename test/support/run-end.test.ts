/** The end-of-run task list: order, isolation of failures, and running each task once. */
import { describe, expect, test } from "bun:test";
import { taskList } from "./run-end.ts";

describe("taskList", () => {
  test("runs tasks in registration order, each once", async () => {
    const seen: string[] = [];
    const list = taskList();
    list.add("a", async () => void seen.push("a"));
    list.add("b", async () => void seen.push("b"));
    await list.run();
    await list.run();
    expect(seen).toEqual(["a", "b"]);
  });

  test("a failing task is reported by name and the later ones still run", async () => {
    const seen: string[] = [];
    const reports: string[] = [];
    const list = taskList((line) => reports.push(line));
    list.add("dropping the template", async () => {
      throw new Error("connection refused");
    });
    list.add("after", async () => void seen.push("after"));
    await list.run();
    expect(seen).toEqual(["after"]);
    expect(reports).toEqual(["end of test run: dropping the template failed: Error: connection refused"]);
  });
});
