/**
 * The words mail clients write around quoted history, forwarded messages and signatures, in English,
 * German, French, Spanish, Italian, Portuguese, Dutch, Japanese and Chinese.
 *
 * Every pattern here runs on one trimmed line of at most {@link MAX_MARKER_LINE} characters (callers
 * never pass a longer one), has no nested quantifiers and is anchored at both ends or at one, so a
 * test costs time linear in that bounded line whatever the body holds.
 */

/** A line longer than this is content: no client writes a header, tagline or closing this long. */
export const MAX_MARKER_LINE = 400;

/** The client a marker is typical of (`vendor` of a segment). */
export type Vendor = "gmail" | "outlook" | "apple_mail" | "thunderbird" | "yahoo" | "zoho";

/** A pattern alternation of `words`, each escaped, a space matching any run of white space. */
export const alt = (words: readonly string[]) =>
  words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replace(/ /g, "\\s+")).join("|");

// --- Quote headers: "On <date>, <name> wrote:" ----------------------------------------------------

/** The verb an attribution line ends with, per language (Yahoo's German "Folgendes geschrieben"). */
const WROTE = [
  "wrote",
  "writes",
  "schrieb",
  "geschrieben",
  "a écrit",
  "a ecrit",
  "escribió",
  "escribio",
  "ha scritto",
  "scrisse",
  "escreveu",
  "schreef",
  "heeft geschreven",
  "geschreven",
  "写道",
  "寫道",
  "のメッセージ",
  "のメール",
  "は書きました",
];

/** The words an attribution line starts with ("On", "Am", "Le", "El", "Il", "Em", "No dia", "Op"). */
const LEADS = ["on", "am", "le", "el", "il", "em", "no dia", "a", "op", "de", "on the"];

const ATTRIBUTION_END = new RegExp(`(?:${alt(WROTE)})\\s*[:：]?$`, "i");
const ATTRIBUTION_LEAD = new RegExp(`^(?:${alt(LEADS)})\\s`, "i");
/** A date or a time or an address somewhere in the line: what tells an attribution from prose. */
const HAS_DATE_OR_ADDRESS = /\d|@/;
/** German, Dutch and others put the verb before the sender: `Am 8. Jan. 2024 schrieb Bob <b@x>:`. */
const VERB_INSIDE = new RegExp(`\\s(?:${alt(WROTE)})\\s`, "i");
/** Gmail's Japanese and Chinese forms: a date, then the sender, then only a colon: `2024年1月1日(月) 10:00 X <x@y>:`. */
const CJK_ATTRIBUTION = /^\d{4}\s*[年/.-]\s*\d{1,2}.{0,200}[>＞]\s*[:：]$/;
/** Gmail's Chinese form puts the sender first: `X <x@y> 于2024年1月1日周一 10:00写道：`. */
const CJK_SENDER_FIRST = /[>＞]\s*于.{0,80}写道\s*[:：]?$/;

/** Whether a trimmed line may be the first of an attribution wrapped over several lines. */
export function mayStartAttribution(line: string): boolean {
  if (line.length > MAX_MARKER_LINE) return false;
  // "On …", a CJK date, or a sender first ("Bob <bob@x> schrieb am Di., 5.").
  return ATTRIBUTION_LEAD.test(line) || /^\d{4}\s*[年/.-]/.test(line) || line.includes("@");
}

/** Zoho's `---- On … wrote ----`: the attribution between dashes, or null. */
export function dashedAttribution(line: string): string | null {
  if (line.length > MAX_MARKER_LINE || !line.startsWith("--")) return null;
  const inner = /^-{2,}\s*(.*?)\s*-{2,}$/.exec(line)?.[1];
  return inner !== undefined && isAttribution(inner) ? inner : null;
}

/** Whether `line` (trimmed, one or several joined lines) is an attribution line introducing a quote. */
export function isAttribution(line: string): boolean {
  if (line.length > MAX_MARKER_LINE) return false;
  if (CJK_ATTRIBUTION.test(line) || CJK_SENDER_FIRST.test(line)) return true;
  if (
    /[:：]$/.test(line) &&
    (ATTRIBUTION_LEAD.test(line) || line.includes("@")) &&
    VERB_INSIDE.test(line) &&
    HAS_DATE_OR_ADDRESS.test(line)
  )
    return true;
  if (!ATTRIBUTION_END.test(line)) return false;
  // "Bob wrote:" alone is an attribution too (mailing-list style), but prose ending "she wrote:" is
  // rare enough; require a lead word, a date, or an address.
  return ATTRIBUTION_LEAD.test(line) || HAS_DATE_OR_ADDRESS.test(line) || line.length < 60;
}

// --- Header blocks (Outlook and forwarded originals) ---------------------------------------------

/** The header field names a client writes above quoted or forwarded mail, mapped to one name. */
const FIELD_WORDS: Record<string, readonly string[]> = {
  from: ["from", "von", "de", "da", "van", "差出人", "送信者", "发件人", "寄件者", "寄件人", "發件人"],
  sent: [
    "sent",
    "date",
    "gesendet",
    "datum",
    "envoyé",
    "envoye",
    "enviado",
    "enviado el",
    "enviada em",
    "enviado em",
    "fecha",
    "inviato",
    "data",
    "verzonden",
    "送信日時",
    "日付",
    "日時",
    "发送时间",
    "日期",
    "時間",
    "寄件日期",
    "发送日期",
  ],
  to: ["to", "an", "à", "a", "para", "aan", "宛先", "收件人", "收件者"],
  cc: ["cc", "kopie", "copie", "cco", "ccn", "抄送", "副本"],
  subject: [
    "subject",
    "betreff",
    "objet",
    "asunto",
    "oggetto",
    "assunto",
    "onderwerp",
    "件名",
    "主题",
    "主旨",
    "主題",
  ],
  message_id: ["message-id"],
  reply_to: ["reply-to", "antwort an", "répondre à"],
};

/** Canonical name of each field word, lowercased. */
const FIELD_BY_WORD = new Map<string, string>();
for (const [field, words] of Object.entries(FIELD_WORDS)) for (const w of words) FIELD_BY_WORD.set(w, field);

/** Longest field name we know (`enviado el`, `antwort an`, `以上为转发的邮件`) plus bold marks and spaces. */
const MAX_FIELD_PREFIX = 24;

/**
 * A header field line of a quoted or forwarded block: its canonical name and value, or null. Accepts
 * `From: x`, `*From:* x` (Gmail's bold in derived text), `From : x` (French spacing), `发件人：x`.
 * Plain string work, no pattern: it runs on many lines of every body.
 */
export function headerField(line: string): { field: string; value: string } | null {
  if (line.length > MAX_MARKER_LINE) return null;
  let colon = -1;
  const limit = Math.min(line.length, MAX_FIELD_PREFIX);
  for (let k = 1; k < limit; k++) {
    const c = line.charCodeAt(k);
    if (c === 0x3a || c === 0xff1a) {
      colon = k;
      break;
    }
  }
  if (colon < 0) return null;
  let name = line.slice(0, colon);
  if (name.includes("*")) name = name.replaceAll("*", "");
  name = name.trim().toLowerCase();
  if (name.includes("  ") || name.includes("\t")) name = name.replace(/\s+/g, " ");
  const field = FIELD_BY_WORD.get(name);
  if (field === undefined) return null;
  let value = line.slice(colon + 1);
  if (value.includes("*")) value = value.replaceAll("*", " ");
  return { field, value: value.trim() };
}

// --- Separator lines -----------------------------------------------------------------------------

/** Forward markers: Gmail's `---------- Forwarded message ---------`, Thunderbird's, Apple Mail's. */
const FORWARD_WORDS = [
  "forwarded message",
  "forwarded message follows",
  "begin forwarded message",
  "weitergeleitete nachricht",
  "anfang der weitergeleiteten nachricht",
  "message transféré",
  "message transfere",
  "début du message réexpédié",
  "début du message transféré",
  "mensaje reenviado",
  "inicio del mensaje reenviado",
  "comienzo del mensaje reenviado",
  "messaggio inoltrato",
  "inizio messaggio inoltrato",
  "mensagem encaminhada",
  "início da mensagem reencaminhada",
  "início da mensagem encaminhada",
  "começo da mensagem encaminhada",
  "mensagem reencaminhada",
  "doorgestuurd bericht",
  "begin doorgestuurd bericht",
  "転送されたメッセージ",
  "転送メッセージ",
  "转发的邮件",
  "以下为转发的邮件",
  "轉寄的郵件",
  "原始邮件信息",
];

/** Outlook's and old clients' "original message" separators. */
const ORIGINAL_WORDS = [
  "original message",
  "ursprüngliche nachricht",
  "originalnachricht",
  "message d'origine",
  "message d’origine",
  "mensaje original",
  "messaggio originale",
  "mensagem original",
  "oorspronkelijk bericht",
  "origineel bericht",
  "元のメッセージ",
  "原始邮件",
  "原始郵件",
];

const FORWARD_LINE = new RegExp(`^[-=_ ]{0,20}(?:${alt(FORWARD_WORDS)})[-=_ ]{0,20}[:：]?$`, "i");
const ORIGINAL_LINE = new RegExp(`^[-=_ ]{2,20}(?:${alt(ORIGINAL_WORDS)})[-=_ ]{2,20}$`, "i");
/** Outlook's divider above the From:/Sent: block in text (a line of underscores). */
const OUTLOOK_RULE = /^_{10,}$/;

export function isForwardMarker(line: string): boolean {
  return line.length <= MAX_MARKER_LINE && FORWARD_LINE.test(line);
}

export function isOriginalMarker(line: string): boolean {
  return line.length <= MAX_MARKER_LINE && ORIGINAL_LINE.test(line);
}

export function isOutlookRule(line: string): boolean {
  return line.length <= MAX_MARKER_LINE && OUTLOOK_RULE.test(line);
}

/** Subject prefixes of a forward (Fwd:, WG:, TR:, RV:, I:, ENC:, Doorst:, 转发:, 転送:). */
export const FORWARD_SUBJECT = /^\s*(?:\[?(?:fwd?|fw|wg|tr|rv|i|enc|doorst|reenv|转发|轉寄|転送)\s*[:：])/i;
