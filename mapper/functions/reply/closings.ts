/**
 * What opens a signature, in the languages the segmenter reads: the `-- ` separator, device and app
 * taglines, and closing formulas. Like markers.ts, every pattern runs on one short trimmed line.
 */
import { alt } from "./markers.ts";

/** RFC 3676 §4.3's signature separator, and the bare `--` clients leave after trimming. */
export function isSignatureDelimiter(rawLine: string): boolean {
  return rawLine === "-- " || rawLine === "--" || rawLine === "-- \r" || rawLine === "--\r";
}

/** Device and app taglines ("Sent from my iPhone", "Get Outlook for iOS") and their translations. */
const TAGLINES = [
  /^sent (?:from|with|via|using) my .{1,60}$/i,
  /^sent (?:from|with|via|using) (?:the )?(?:yahoo|outlook|gmail|proton ?mail|mail for|blackberry|samsung|android|iphone|ipad|aol|zoho|spark|airmail|superhuman|edison|bluemail|hey|fastmail|tutanota|thunderbird|mobile)\b.{0,60}$/i,
  /^get (?:outlook|the .{1,30} app) for .{1,60}$/i,
  /^von meinem .{1,40} gesendet\.?$/i,
  /^gesendet (?:von|mit|über) .{1,40}$/i,
  /^outlook für .{1,30} (?:beziehen|herunterladen)$/i,
  /^envoyé (?:de|depuis|à partir de) (?:mon|ma) .{1,40}$/i,
  /^obtenir outlook pour .{1,30}$/i,
  /^enviado (?:desde|do|de|pelo) (?:mi|meu|o meu|minha) .{1,40}$/i,
  /^obt(?:e|é)n(?:er)? outlook para .{1,30}$/i,
  /^obter o outlook para .{1,30}$/i,
  /^inviato da(?:l mio| il mio)? .{1,40}$/i,
  /^scarica outlook per .{1,30}$/i,
  /^(?:verzonden|verstuurd) (?:vanaf|met|via) (?:mijn )?.{1,40}$/i,
  /^outlook voor .{1,30} downloaden$/i,
  /^.{1,30}から送信$/,
  /^outlook for .{1,20} を入手$/i,
  /^发自我的.{1,30}$/,
  /^(?:从|來自|来自)我的\s?.{1,30}(?:发送|傳送|的邮件)?$/,
  /^获取\s?outlook for .{1,20}$/i,
];

export function isTagline(line: string): boolean {
  if (line.length > 100) return false;
  for (const re of TAGLINES) if (re.test(line)) return true;
  return false;
}

/** Closing formulas that open a signature block when they stand alone on a line. */
const CLOSINGS = [
  // English
  "thanks",
  "thanks again",
  "thanks in advance",
  "thank you",
  "thank you very much",
  "many thanks",
  "thx",
  "ty",
  "best",
  "best regards",
  "best wishes",
  "kind regards",
  "kindest regards",
  "warm regards",
  "warmest regards",
  "regards",
  "cheers",
  "sincerely",
  "sincerely yours",
  "yours sincerely",
  "yours truly",
  "yours",
  "all the best",
  "take care",
  "talk soon",
  "br",
  // German
  "mit freundlichen grüßen",
  "mit freundlichen grüssen",
  "mit freundlichem gruß",
  "mit besten grüßen",
  "freundliche grüße",
  "freundliche grüsse",
  "viele grüße",
  "viele grüsse",
  "beste grüße",
  "beste grüsse",
  "liebe grüße",
  "liebe grüsse",
  "herzliche grüße",
  "schöne grüße",
  "grüße",
  "gruß",
  "lg",
  "vg",
  "mfg",
  "danke",
  "vielen dank",
  "danke und gruß",
  // French
  "cordialement",
  "bien cordialement",
  "très cordialement",
  "bien à vous",
  "salutations",
  "sincères salutations",
  "amicalement",
  "merci",
  "merci beaucoup",
  "merci d'avance",
  "bonne journée",
  "à bientôt",
  "bises",
  // Spanish
  "saludos",
  "un saludo",
  "saludos cordiales",
  "un cordial saludo",
  "atentamente",
  "gracias",
  "muchas gracias",
  "un abrazo",
  "abrazos",
  // Italian
  "cordiali saluti",
  "distinti saluti",
  "saluti",
  "un saluto",
  "grazie",
  "grazie mille",
  "a presto",
  // Portuguese
  "atenciosamente",
  "cumprimentos",
  "com os melhores cumprimentos",
  "obrigado",
  "obrigada",
  "muito obrigado",
  "muito obrigada",
  "abraços",
  "abraço",
  "abs",
  "att",
  "beijos",
  // Dutch
  "met vriendelijke groet",
  "met vriendelijke groeten",
  "vriendelijke groet",
  "vriendelijke groeten",
  "hartelijke groet",
  "hartelijke groeten",
  "groeten",
  "groetjes",
  "groet",
  "bedankt",
  "dank je wel",
  "dank u wel",
  "mvg",
];

const CJK_CLOSINGS = [
  "よろしくお願いします",
  "よろしくお願いいたします",
  "よろしくお願い致します",
  "宜しくお願いします",
  "宜しくお願いいたします",
  "以上、よろしくお願いいたします",
  "以上です",
  "敬具",
  "谢谢",
  "謝謝",
  "此致",
  "此致敬礼",
  "敬礼",
  "祝好",
  "顺祝商祺",
  "顺颂商祺",
  "祝商祺",
];

const CLOSING_LINE = new RegExp(`^(?:${alt(CLOSINGS)})\\s*[,.!]*$`, "i");
const CLOSING_WITH_NAME = new RegExp(
  `^(?:${alt(CLOSINGS)})\\s*[,]\\s*\\p{Lu}[\\p{L}'.-]{0,20}(?:\\s\\p{Lu}[\\p{L}'.-]{0,20}){0,2}\\.?$`,
  "iu",
);
const CJK_CLOSING_LINE = new RegExp(`^(?:${alt(CJK_CLOSINGS)})[。！!、,，]*$`);

/** Whether a trimmed line is a closing formula alone ("Best regards,") or with a name ("Thanks, Ann"). */
export function isClosing(line: string): boolean {
  if (line.length > 60) return false;
  if (CLOSING_LINE.test(line) || CJK_CLOSING_LINE.test(line)) return true;
  // "Thanks, Ann": the name after the comma must look like a name, capitalised as written.
  return CLOSING_WITH_NAME.test(line) && /,\s*\p{Lu}/u.test(line);
}
