/** Reply segmentation of plain-text bodies: each client's quote style, in each language we read. */
import { describe, expect, test } from "bun:test";
import { segmentText } from "./index.ts";

const kinds = (text: string, split = false) =>
  segmentText(text, { includeSignature: true, splitQuotedByDepth: split }).segments.map(
    (s) => `${s.kind}@${s.depth}`,
  );

const QUOTE = "> Can we meet on Tuesday?\n>\n> Bob";

describe("quote headers of each client and language", () => {
  test.each([
    ["Gmail, English", "On Mon, Jan 8, 2024 at 10:15 AM Bob Jones <bob@example.com> wrote:"],
    ["Gmail, English, wrapped", "On Mon, Jan 8, 2024 at 10:15 AM Bob Jones <\nbob@example.com> wrote:"],
    ["Apple Mail, English", "On Jan 8, 2024, at 10:15, Bob Jones <bob@example.com> wrote:"],
    ["Thunderbird, English", "On 1/8/24 10:15 AM, Bob Jones wrote:"],
    ["Yahoo, English", "On Monday, January 8, 2024, 10:15:00 AM GMT+1, Bob Jones <bob@example.com> wrote:"],
    ["Gmail, German", "Am Mo., 8. Jan. 2024 um 10:15 Uhr schrieb Bob Jones <bob@example.com>:"],
    ["Apple Mail, German", "Am 08.01.2024 um 10:15 schrieb Bob Jones <bob@example.com>:"],
    [
      "Yahoo, German",
      "Am Montag, 8. Januar 2024, 10:15:00 MEZ hat Bob Jones <bob@example.com> Folgendes geschrieben:",
    ],
    ["Gmail, French", "Le lun. 8 janv. 2024 à 10:15, Bob Jones <bob@example.com> a écrit :"],
    ["Apple Mail, French", "Le 8 janv. 2024 à 10:15, Bob Jones <bob@example.com> a écrit :"],
    ["Gmail, Spanish", "El lun, 8 ene 2024 a las 10:15, Bob Jones (<bob@example.com>) escribió:"],
    ["Gmail, Italian", "Il giorno lun 8 gen 2024 alle ore 10:15 Bob Jones <bob@example.com> ha scritto:"],
    ["Apple Mail, Italian", "Il giorno 8 gen 2024, alle ore 10:15, Bob Jones <bob@example.com> ha scritto:"],
    [
      "Gmail, Portuguese (Brazil)",
      "Em seg., 8 de jan. de 2024 às 10:15, Bob Jones <bob@example.com> escreveu:",
    ],
    ["Apple Mail, Portuguese", "No dia 8 de jan. de 2024, às 10:15, Bob Jones <bob@example.com> escreveu:"],
    ["Gmail, Dutch", "Op ma 8 jan 2024 om 10:15 schreef Bob Jones <bob@example.com>:"],
    [
      "Apple Mail, Dutch",
      "Op 8 jan. 2024 om 10:15 heeft Bob Jones <bob@example.com> het volgende geschreven:",
    ],
    ["Gmail, Japanese", "2024年1月8日(月) 10:15 Bob Jones <bob@example.com>:"],
    ["Apple Mail, Japanese", "2024/01/08 10:15、Bob Jones <bob@example.com>のメール:"],
    ["Gmail, Chinese", "Bob Jones <bob@example.com> 于2024年1月8日周一 10:15写道："],
    ["Apple Mail, Chinese", "2024年1月8日 10:15，Bob Jones <bob@example.com> 写道："],
  ])("%s: the attribution line and the quote are history", (_name, header) => {
    const r = segmentText(`Tuesday works for me.\n\n${header}\n${QUOTE}\n`);
    expect(r.reply_content).toBe("Tuesday works for me.");
    expect(r.has_quoted_content).toBe(true);
    expect(r.segments.map((s) => s.kind)).toEqual(["reply_content", "quoted_header", "quoted_content"]);
    expect(r.segments[1]?.content.replace(/\s+/g, " ")).toBe(header.replace(/\s+/g, " "));
    expect(r.segments[2]).toMatchObject({ depth: 1, content: "Can we meet on Tuesday?\n\nBob" });
  });

  test.each([
    ["On Mon, Jan 8, 2024 at 10:15 AM Bob Jones <bob@example.com> wrote:", "gmail"],
    ["On Jan 8, 2024, at 10:15, Bob Jones <bob@example.com> wrote:", "apple_mail"],
    ["On 1/8/24 10:15 AM, Bob Jones wrote:", "thunderbird"],
    ["On Monday, January 8, 2024, 10:15:00 AM GMT+1, Bob Jones <bob@example.com> wrote:", "yahoo"],
    ["---- On Mon, 08 Jan 2024 10:15:00 +0100 bob@example.com wrote ----", "zoho"],
    ["Bob Jones wrote:", null],
  ])("the client an attribution is typical of: %s", (header, vendor) => {
    const r = segmentText(`Yes.\n\n${header}\n> Meet?`);
    expect((r.segments[1]?.vendor ?? null) as string | null).toBe(vendor);
    expect(r.detected_vendors as string[]).toEqual(vendor ? [vendor] : []);
  });

  test.each([
    [
      "English",
      "From: Bob Jones <bob@example.com>\nSent: Monday, January 8, 2024 10:15 AM\nTo: Alice <alice@example.com>\nSubject: Meeting",
    ],
    [
      "German",
      "Von: Bob Jones <bob@example.com>\nGesendet: Montag, 8. Januar 2024 10:15\nAn: Alice <alice@example.com>\nBetreff: Treffen",
    ],
    [
      "French",
      "De : Bob Jones <bob@example.com>\nEnvoyé : lundi 8 janvier 2024 10:15\nÀ : Alice <alice@example.com>\nObjet : Réunion",
    ],
    [
      "Spanish",
      "De: Bob Jones <bob@example.com>\nEnviado el: lunes, 8 de enero de 2024 10:15\nPara: Alice <alice@example.com>\nAsunto: Reunión",
    ],
    [
      "Italian",
      "Da: Bob Jones <bob@example.com>\nInviato: lunedì 8 gennaio 2024 10:15\nA: Alice <alice@example.com>\nOggetto: Riunione",
    ],
    [
      "Portuguese",
      "De: Bob Jones <bob@example.com>\nEnviada em: segunda-feira, 8 de janeiro de 2024 10:15\nPara: Alice <alice@example.com>\nAssunto: Reunião",
    ],
    [
      "Dutch",
      "Van: Bob Jones <bob@example.com>\nVerzonden: maandag 8 januari 2024 10:15\nAan: Alice <alice@example.com>\nOnderwerp: Vergadering",
    ],
    [
      "Japanese",
      "差出人: Bob Jones <bob@example.com>\n送信日時: 2024年1月8日 10:15\n宛先: Alice <alice@example.com>\n件名: 会議",
    ],
    [
      "Chinese",
      "发件人: Bob Jones <bob@example.com>\n发送时间: 2024年1月8日 10:15\n收件人: Alice <alice@example.com>\n主题: 会议",
    ],
    [
      "Chinese (traditional)",
      "寄件者: Bob Jones <bob@example.com>\n寄件日期: 2024年1月8日 10:15\n收件者: Alice <alice@example.com>\n主旨: 會議",
    ],
  ])(
    "Outlook desktop, web and mobile, %s: the header block and everything under it are history",
    (_name, block) => {
      for (const above of ["________________________________\n", "", "-----Original Message-----\n"]) {
        const r = segmentText(`Tuesday works.\n\n${above}${block}\n\nCan we meet on Tuesday?\n\nBob\n`);
        expect(r.reply_content).toBe("Tuesday works.");
        expect(r.segments.map((s) => s.kind)).toEqual(["reply_content", "quoted_header", "quoted_content"]);
        expect(r.segments[2]?.content).toBe("Can we meet on Tuesday?\n\nBob");
        expect(r.detected_vendors).toEqual(["outlook"]);
      }
    },
  );

  test.each([
    ["-----Original Message-----"],
    ["-----Ursprüngliche Nachricht-----"],
    ["-----Message d'origine-----"],
    ["-----Mensaje original-----"],
    ["-----Messaggio originale-----"],
    ["-----Mensagem original-----"],
    ["-----Oorspronkelijk bericht-----"],
    ["-----元のメッセージ-----"],
    ["------------------ 原始邮件 ------------------"],
  ])("%s starts history", (marker) => {
    const r = segmentText(`Done.\n\n${marker}\nFrom: bob@example.com\n\nPlease do it.`);
    expect(r.reply_content).toBe("Done.");
    expect(r.segments[1]).toMatchObject({ kind: "quoted_header", detectors: ["plain.original_message"] });
  });

  test("a chain of Outlook replies nests one level per header", () => {
    const text =
      "Third.\n\nFrom: B <b@x.example>\nSent: Tuesday\nTo: A\nSubject: RE: x\n\nSecond.\n\nFrom: A <a@x.example>\nSent: Monday\nTo: B\nSubject: x\n\nFirst.";
    expect(kinds(text, true)).toEqual([
      "reply_content@0",
      "quoted_header@1",
      "quoted_content@1",
      "quoted_header@2",
      "quoted_content@2",
    ]);
  });
});

describe("> quotes", () => {
  test("depth is the number of marks, with or without spaces between them", () => {
    const text =
      "Yes.\n\nOn Mon, Bob wrote:\n> Really?\n> > On Sun, Ann wrote:\n> > > Deep\n>>> deeper still\n";
    const r = segmentText(text, { splitQuotedByDepth: true });
    expect(r.max_depth).toBe(3);
    expect(r.segments.map((s) => [s.kind, s.depth, s.content])).toEqual([
      ["reply_content", 0, "Yes."],
      ["quoted_header", 1, "On Mon, Bob wrote:"],
      ["quoted_content", 1, "Really?"],
      ["quoted_header", 3, "On Sun, Ann wrote:"],
      ["quoted_content", 3, "Deep\ndeeper still"],
    ]);
  });
  test("without split_quoted_by_depth the quoted lines are one segment at the shallowest depth", () => {
    const r = segmentText("Yes.\n> a\n>> b\n> c");
    expect(r.segments.map((s) => [s.kind, s.depth, s.content])).toEqual([
      ["reply_content", 0, "Yes."],
      ["quoted_content", 1, "a\nb\nc"],
    ]);
  });
  test("an inline reply keeps the new lines in order, between the quotes", () => {
    const text =
      "On Mon, Jan 8, 2024 at 10:15 AM Bob <bob@example.com> wrote:\n> Question one?\nAnswer one.\n\n> Question two?\n> More.\nAnswer two,\nover two lines.\n";
    const r = segmentText(text);
    expect(r.reply_content).toBe("Answer one.\n\nAnswer two,\nover two lines.");
    expect(kinds(text)).toEqual([
      "quoted_header@1",
      "quoted_content@1",
      "reply_content@0",
      "quoted_content@1",
      "reply_content@0",
    ]);
  });
  test("bottom posting: the new content under the quote is the reply", () => {
    expect(segmentText("Bob wrote:\n> Lunch?\n\nSure, noon.\n").reply_content).toBe("Sure, noon.");
  });
});

describe("forwards", () => {
  test.each([
    ["Gmail", "---------- Forwarded message ---------", "gmail"],
    ["Gmail, German", "---------- Weitergeleitete Nachricht ---------", "gmail"],
    ["Gmail, French", "---------- Message transféré ---------", "gmail"],
    ["Gmail, Spanish", "---------- Mensaje reenviado ---------", "gmail"],
    ["Gmail, Italian", "---------- Messaggio inoltrato ---------", "gmail"],
    ["Gmail, Portuguese", "---------- Mensagem encaminhada ---------", "gmail"],
    ["Gmail, Dutch", "---------- Doorgestuurd bericht ---------", "gmail"],
    ["Gmail, Japanese", "---------- 転送されたメッセージ ---------", "gmail"],
    ["Gmail, Chinese", "---------- 转发的邮件 ---------", "gmail"],
    ["Thunderbird", "-------- Forwarded Message --------", "thunderbird"],
    ["Thunderbird, German", "-------- Weitergeleitete Nachricht --------", "thunderbird"],
    ["Apple Mail", "Begin forwarded message:", "apple_mail"],
    ["Apple Mail, German", "Anfang der weitergeleiteten Nachricht:", "apple_mail"],
    ["Apple Mail, French", "Début du message réexpédié :", "apple_mail"],
    ["Apple Mail, Spanish", "Inicio del mensaje reenviado:", "apple_mail"],
    ["Apple Mail, Italian", "Inizio messaggio inoltrato:", "apple_mail"],
    ["Apple Mail, Portuguese", "Início da mensagem reencaminhada:", "apple_mail"],
    ["Apple Mail, Dutch", "Begin doorgestuurd bericht:", "apple_mail"],
  ])(
    "%s: the marker and its header fields are the forwarded header; the rest is forwarded content",
    (_n, marker, vendor) => {
      const text = `FYI, see below.\n\n${marker}\n\nFrom: Carol <carol@example.com>\nDate: Mon, Jan 8, 2024 at 9:00 AM\nSubject: Report\nTo: Alice <alice@example.com>\n\n\nHere is the report.\n\nOn Sun, Dan wrote:\n> older\n`;
      const r = segmentText(text);
      expect(r.reply_content).toBe("FYI, see below.");
      expect(r.segments.map((s) => s.kind)).toEqual([
        "reply_content",
        "forwarded_header",
        "forwarded_content",
      ]);
      expect(r.segments[1]?.content).toContain("Subject: Report");
      expect(r.segments[2]?.content).toBe("Here is the report.\n\nOn Sun, Dan wrote:\n> older");
      expect(r.detected_vendors as string[]).toEqual([vendor]);
    },
  );
});

test("a message encapsulated in the body (its header fields between two rules of dashes) is forwarded", () => {
  const text =
    "My note.\n\n\n--------------------\nFrom:    carol@example.net\nSubject: Original\n--------------------\n\nOriginal body.\n";
  const r = segmentText(text);
  expect(r.reply_content).toBe("My note.");
  expect(r.segments.map((s) => [s.kind, s.detectors])).toEqual([
    ["reply_content", ["plain.leading_unquoted"]],
    ["forwarded_header", ["plain.encapsulated_message"]],
    ["forwarded_content", ["plain.encapsulated_message"]],
  ]);
});

describe("signatures", () => {
  test.each([
    ["the -- delimiter", "Sounds good.\n\n-- \nAlice Smith\nACME Corp | +1 555 0100"],
    ["-- without its space", "Sounds good.\n--\nAlice"],
    ["Sent from my iPhone", "Sounds good.\n\nSent from my iPhone"],
    ["Get Outlook for iOS", "Sounds good.\n\nGet Outlook for iOS"],
    ["Get Outlook for Android", "Sounds good.\n\nGet Outlook for Android<https://aka.ms/AAb9ysg>"],
    ["Sent from Yahoo Mail", "Sounds good.\n\nSent from Yahoo Mail on Android"],
    ["Sent from Mail for Windows", "Sounds good.\n\nSent from Mail for Windows"],
    ["German tagline", "Sounds good.\n\nVon meinem iPhone gesendet"],
    ["German Outlook tagline", "Sounds good.\n\nOutlook für Android herunterladen"],
    ["French tagline", "Sounds good.\n\nEnvoyé de mon iPhone"],
    ["Spanish tagline", "Sounds good.\n\nEnviado desde mi iPhone"],
    ["Italian tagline", "Sounds good.\n\nInviato da iPhone"],
    ["Portuguese tagline", "Sounds good.\n\nEnviado do meu iPhone"],
    ["Dutch tagline", "Sounds good.\n\nVerzonden vanaf mijn iPhone"],
    ["Japanese tagline", "Sounds good.\n\niPhoneから送信"],
    ["Chinese tagline", "Sounds good.\n\n发自我的iPhone"],
    ["Best regards with a name", "Sounds good.\n\nBest regards,\nAlice Smith\nHead of Sales"],
    ["Thanks, and a name on the same line", "Sounds good.\n\nThanks, Alice"],
    ["Cheers", "Sounds good.\n\nCheers,\nAl"],
    ["Mit freundlichen Grüßen", "Sounds good.\n\nMit freundlichen Grüßen\nAlice Schmidt"],
    ["Viele Grüße", "Sounds good.\n\nViele Grüße\nAlice"],
    ["Cordialement", "Sounds good.\n\nCordialement,\nAlice Dupont"],
    ["Saludos", "Sounds good.\n\nSaludos,\nAlicia"],
    ["Un saludo", "Sounds good.\n\nUn saludo\nAlicia"],
    ["Cordiali saluti", "Sounds good.\n\nCordiali saluti\nAlice Rossi"],
    ["Atenciosamente", "Sounds good.\n\nAtenciosamente,\nAlice Silva"],
    ["Met vriendelijke groet", "Sounds good.\n\nMet vriendelijke groet,\nAlice de Vries"],
    ["よろしくお願いします", "Sounds good.\n\nよろしくお願いします。\n山田"],
    ["谢谢", "Sounds good.\n\n谢谢！\n王芳"],
  ])("%s starts the signature", (_name, text) => {
    const r = segmentText(text, { includeSignature: true });
    expect(r.reply_content).toBe("Sounds good.");
    expect(r.segments.at(-1)?.kind).toBe("signature");
  });

  test("the greeting stays, and the signature is cut before the quote", () => {
    const text =
      "Hi Bob,\n\nTuesday works.\n\nBest regards,\nAlice\n\nOn Mon, Jan 8, 2024 at 10:15 AM Bob <bob@example.com> wrote:\n> Lunch?";
    expect(segmentText(text).reply_content).toBe("Hi Bob,\n\nTuesday works.");
    expect(kinds(text)).toEqual(["reply_content@0", "signature@0", "quoted_header@1", "quoted_content@1"]);
  });

  test.each([
    ["a lone thank-you is the message", "Thanks!"],
    ["a thank-you above the content", "Thanks!\n\nI looked at the file and it is fine."],
    ["a greeting then a thank-you", "Hi Bob,\n\nThanks!"],
    [
      "a closing with a long paragraph under it",
      `Noted.\n\nThanks,\n${"This is a long paragraph that goes on. ".repeat(5)}`,
    ],
    ["prose that mentions a phone", "I sent it from my iPhone yesterday, did it arrive?"],
    ["'Thanks, that works' is prose", "Sure.\n\nThanks, that works for me"],
  ])("no signature: %s", (_name, text) => {
    const r = segmentText(text, { includeSignature: true });
    expect(r.reply_content).toBe(text.trim());
    expect(r.segments.map((s) => s.kind)).toEqual(["reply_content"]);
  });

  test("signature segments are left out unless include_signature, and never count as reply content", () => {
    const text = "Sounds good.\n\n-- \nAlice";
    expect(segmentText(text).segments.map((s) => s.kind)).toEqual(["reply_content"]);
    expect(segmentText(text, { includeSignature: true }).segments.map((s) => s.kind)).toEqual([
      "reply_content",
      "signature",
    ]);
  });
});

describe("the reply content", () => {
  test("is the text trimmed, byte for byte, when nothing is quoted or signed", () => {
    const text = "\r\n  Hello,\r\n\r\n  indented   line\twith tab\r\nlast line  \r\n\r\n";
    expect(segmentText(text).reply_content).toBe(text.trim());
    expect(segmentText("").reply_content).toBe("");
  });
  test("a message that is only a quote has no reply content", () => {
    const r = segmentText("> only\n> quoted");
    expect(r.reply_content).toBe("");
    expect(r.has_quoted_content).toBe(true);
  });
  test("min_confidence and max_segments filter segments, not the reply content", () => {
    const text = "Yes.\n\nFrom: Bob <b@x.example>\nSubject: Q\n\nWhy?";
    expect(segmentText(text, { minConfidence: 0.9 }).segments.map((s) => s.kind)).toEqual([
      "reply_content",
      "quoted_content",
    ]);
    const capped = segmentText(text, { maxSegments: 1 });
    expect(capped.segments.length).toBe(1);
    expect(capped.reply_content).toBe("Yes.");
  });
});
