/**
 * The dates mail clients write in a forwarded message's header block, in the languages the segmenter
 * reads: `Mon, Jan 8, 2024 at 9:00 AM` (Gmail), `Monday, January 8, 2024 10:15 AM` (Outlook),
 * `8. Januar 2024 um 09:00:00 MEZ` (Apple Mail, German), `lun. 8 janv. 2024 à 09:00`, `2024年1月8日 10:15`, …
 * Read into RFC 3339 UTC; a date without a zone is taken as UTC.
 */

/** Month names and their usual abbreviations → month number (1–12). */
const MONTHS: Record<string, number> = {};
const NAMES: Array<[number, string[]]> = [
  [
    1,
    [
      "january",
      "jan",
      "januar",
      "jänner",
      "janvier",
      "janv",
      "enero",
      "ene",
      "gennaio",
      "gen",
      "janeiro",
      "januari",
    ],
  ],
  [
    2,
    [
      "february",
      "feb",
      "februar",
      "février",
      "fevrier",
      "févr",
      "fevr",
      "febrero",
      "febbraio",
      "fevereiro",
      "fev",
      "februari",
    ],
  ],
  [3, ["march", "mar", "märz", "maerz", "mär", "mars", "marzo", "março", "marco", "maart", "mrt"]],
  [4, ["april", "apr", "avril", "avr", "abril", "abr", "aprile"]],
  [5, ["may", "mai", "mayo", "maggio", "mag", "maio", "mei"]],
  [6, ["june", "jun", "juni", "juin", "junio", "giugno", "giu", "junho"]],
  [7, ["july", "jul", "juli", "juillet", "juil", "julio", "luglio", "lug", "julho"]],
  [8, ["august", "aug", "août", "aout", "agosto", "ago", "augustus"]],
  [9, ["september", "sep", "sept", "septembre", "septiembre", "settembre", "set", "setembro"]],
  [10, ["october", "oct", "oktober", "okt", "octobre", "octubre", "ottobre", "ott", "outubro", "out"]],
  [11, ["november", "nov", "novembre", "noviembre", "novembro"]],
  [
    12,
    [
      "december",
      "dec",
      "dezember",
      "dez",
      "décembre",
      "decembre",
      "déc",
      "diciembre",
      "dic",
      "dicembre",
      "dezembro",
    ],
  ],
];
for (const [n, names] of NAMES) for (const name of names) MONTHS[name] = n;

/** Zone abbreviations clients write that `Date` does not know. */
const ZONES: Record<string, string> = {
  MEZ: "+0100",
  MESZ: "+0200",
  CET: "+0100",
  CEST: "+0200",
  WET: "+0000",
  WEST: "+0100",
  EET: "+0200",
  EEST: "+0300",
  BST: "+0100",
  JST: "+0900",
  KST: "+0900",
  IST: "+0530",
  EST: "-0500",
  EDT: "-0400",
  CST: "-0600",
  CDT: "-0500",
  MST: "-0700",
  MDT: "-0600",
  PST: "-0800",
  PDT: "-0700",
  AEST: "+1000",
  AEDT: "+1100",
};

const pad = (n: number) => String(n).padStart(2, "0");

/** The date as RFC 3339 UTC, or null when it cannot be read. */
export function forwardedDate(value: string | undefined): string | null {
  if (!value || value.length > 200) return null;
  const v = value.replace(/\s+/g, " ").trim();
  // CJK: 2024年1月8日(月) 10:15 / 2024年1月8日 上午10:15
  const cjk =
    /(\d{4})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*日.*?(上午|下午|午前|午後)?\s*(\d{1,2}):(\d{2})(?::(\d{2}))?/.exec(
      v,
    );
  if (cjk) {
    let hour = Number(cjk[5]);
    if ((cjk[4] === "下午" || cjk[4] === "午後") && hour < 12) hour += 12;
    return iso(
      Number(cjk[1]),
      Number(cjk[2]),
      Number(cjk[3]),
      hour,
      Number(cjk[6]),
      Number(cjk[7] ?? 0),
      null,
    );
  }
  // Day, month name and year in any order the clients use, then the time and an optional zone.
  const lower = v.toLowerCase();
  let month = 0;
  for (const word of lower.split(/[^\p{L}]+/u)) {
    const m = MONTHS[word];
    if (m !== undefined) {
      month = m;
      break;
    }
  }
  const year = /\b(\d{4})\b/.exec(v)?.[1];
  const time = /\b(\d{1,2}):(\d{2})(?::(\d{2}))?\s*(am|pm|a\.m\.|p\.m\.)?/i.exec(v);
  const withoutTime = time ? v.replace(time[0], " ") : v;
  const day = /\b(\d{1,2})\b(?!:)/.exec(withoutTime.replace(/\b\d{4}\b/, " "))?.[1];
  if (month === 0 || year === undefined || day === undefined) return isoLike(v);
  let hour = time ? Number(time[1]) : 0;
  const meridiem = time?.[4]?.toLowerCase().replace(/\./g, "");
  if (meridiem === "pm" && hour < 12) hour += 12;
  if (meridiem === "am" && hour === 12) hour = 0;
  const zone = /([+-]\d{4})\b/.exec(v)?.[1] ?? zoneOf(v);
  return iso(
    Number(year),
    month,
    Number(day),
    hour,
    time ? Number(time[2]) : 0,
    time ? Number(time[3] ?? 0) : 0,
    zone,
  );
}

function zoneOf(v: string): string | null {
  for (const word of v.split(/[^A-Za-z]+/)) {
    if (ZONES[word]) return ZONES[word] ?? null;
    if (word === "GMT" || word === "UTC" || word === "Z") return "+0000";
  }
  return null;
}

/** `2024-01-08 09:00` and `2024-01-08T09:00:00+01:00`; an all-number date like `05/03/2024` is
 * ambiguous (day or month first) and is not read. */
function isoLike(v: string): string | null {
  const m = /\b(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2}))?)?\s*(Z|[+-]\d{2}:?\d{2})?/.exec(v);
  if (!m) return null;
  const zone = m[7] === undefined || m[7] === "Z" ? zoneOf(v) : m[7].replace(":", "");
  return iso(
    Number(m[1]),
    Number(m[2]),
    Number(m[3]),
    Number(m[4] ?? 0),
    Number(m[5] ?? 0),
    Number(m[6] ?? 0),
    zone,
  );
}

function iso(
  y: number,
  mo: number,
  d: number,
  h: number,
  mi: number,
  s: number,
  zone: string | null,
): string | null {
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return null;
  const text = `${y}-${pad(mo)}-${pad(d)}T${pad(h)}:${pad(mi)}:${pad(Math.min(s, 59))}${zone ? `${zone.slice(0, 3)}:${zone.slice(3)}` : "Z"}`;
  return valid(new Date(text));
}

function valid(d: Date): string | null {
  const t = d.getTime();
  if (Number.isNaN(t) || d.getUTCFullYear() < 1970 || d.getUTCFullYear() > 9999) return null;
  return `${d.toISOString().slice(0, 19)}Z`;
}
