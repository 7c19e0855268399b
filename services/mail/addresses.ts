/**
 * Address fields (RFC 5322 §3.4) → `{email, name}` people.
 *
 * nodemailer's address parser reads the full grammar real mail uses: comments anywhere
 * (`pete(his account)@silly.test`), obsolete source routes (`<@relay:mary@example.net>`), groups
 * (`Team: a@x, b@x;`, flattened) and folding whitespace inside an address. Display names are then
 * decoded from RFC 2047 words.
 */
import addressparser from "nodemailer/lib/addressparser/index.js";
import type { Person } from "../lib/message.ts";
import { decodeWords } from "./mime/words.ts";

/**
 * The people of one address field: emails lowercased, names decoded and trimmed, entries without
 * an address dropped. A display name that is one encoded word hiding a whole address
 * (`=?UTF-8?B?…?=` for `Name <a@b>`) is decoded and read again.
 */
export function readAddresses(value: string, reread = true): Person[] {
  const people: Person[] = [];
  for (const entry of addressparser(value, { flatten: true })) {
    const email = entry.address.trim().toLowerCase();
    const name = decodeWords(entry.name).trim();
    if (email) people.push({ email, name });
    else if (reread && name.includes("@")) people.push(...readAddresses(name, false));
  }
  return people;
}

/** `Name <email>, …` as a reader expects to see an address field. */
export function formatAddresses(value: string | undefined): string {
  if (!value) return "";
  return readAddresses(value)
    .map(({ email, name }) => (name && name !== email ? `${name} <${email}>` : email))
    .join(", ");
}
