/**
 * The labelled set of the reply-accuracy benchmark (tools/bench/understand.ts): plain-text bodies as
 * mail clients write them, each with the new content a reader would keep (quoted history, forwarded
 * blocks and the signature removed; the greeting kept). Written for this benchmark in the styles the
 * public test sets of reply parsers cover (mailgun/talon, crisp-oss/email-reply-parser), plus the
 * clients and languages this service reads.
 */

export interface ReplyCase {
  name: string;
  text: string;
  expected: string;
}

const hand: ReplyCase[] = [
  {
    name: "plain message, no quote",
    text: "Hi team,\n\nThe build is green again. I will cut the release tomorrow.\n\nAlice",
    expected: "Hi team,\n\nThe build is green again. I will cut the release tomorrow.\n\nAlice",
  },
  {
    name: "gmail top post",
    text: "Works for me.\n\nOn Tue, Mar 5, 2024 at 9:12 AM Bob Stone <bob@stone.example> wrote:\n\n> Shall we move the call to 3pm?\n>\n> Bob\n",
    expected: "Works for me.",
  },
  {
    name: "gmail wrapped attribution",
    text: "Yes please.\n\nOn Tue, Mar 5, 2024 at 9:12 AM Roberta Stone-Whitfield <\nroberta.stone-whitfield@very-long-domain.example> wrote:\n\n> Do you want the slides?\n",
    expected: "Yes please.",
  },
  {
    name: "apple mail with tagline",
    text: "On my way.\n\nSent from my iPhone\n\n> On Mar 5, 2024, at 09:12, Bob Stone <bob@stone.example> wrote:\n> \n> Where are you?\n",
    expected: "On my way.",
  },
  {
    name: "outlook desktop divider",
    text: "Approved.\n\nRegards,\nDana Fox\nFinance\n\n________________________________\nFrom: Eli Park <eli@park.example>\nSent: Tuesday, March 5, 2024 9:12 AM\nTo: Dana Fox <dana@fox.example>\nSubject: Invoice 4411\n\nPlease approve the attached invoice.\n",
    expected: "Approved.",
  },
  {
    name: "outlook original message",
    text: "See my comments below.\n\n-----Original Message-----\nFrom: Eli Park [mailto:eli@park.example]\nSent: Tuesday, March 05, 2024 9:12 AM\nTo: Dana Fox\nSubject: Plan\n\nHere is the plan.\n",
    expected: "See my comments below.",
  },
  {
    name: "thunderbird",
    text: "Fixed in 2.3.1.\n\nOn 3/5/24 9:12 AM, Bob Stone wrote:\n> The export crashes on empty files.\n",
    expected: "Fixed in 2.3.1.",
  },
  {
    name: "yahoo",
    text: "Thanks for letting me know!\n\n    On Tuesday, March 5, 2024, 09:12:44 AM EST, Bob Stone <bob@stone.example> wrote:\n\n The parcel arrived.\n",
    expected: "Thanks for letting me know!",
  },
  {
    name: "signature delimiter",
    text: "I attached the logs.\n\n-- \nCarl Mint\nSRE, Example Corp\n+1 555 0100\n",
    expected: "I attached the logs.",
  },
  {
    name: "signature and quote",
    text: "I attached the logs.\n\n--\nCarl\n\nOn Tue, Mar 5, 2024 at 9:12 AM Bob <bob@stone.example> wrote:\n> Logs?\n",
    expected: "I attached the logs.",
  },
  {
    name: "closing formula with title",
    text: "Please find the contract attached.\n\nBest regards,\nMaria Lopez\nLegal Counsel | Example Ltd\n",
    expected: "Please find the contract attached.",
  },
  {
    name: "thanks and name",
    text: "The meeting room is booked.\n\nThanks,\nJo\n",
    expected: "The meeting room is booked.",
  },
  {
    name: "a lone thanks",
    text: "Thanks!\n\nOn Tue, Mar 5, 2024 at 9:12 AM Bob <bob@stone.example> wrote:\n> Done.\n",
    expected: "Thanks!",
  },
  {
    name: "greeting stays",
    text: "Hi Bob,\n\nYes, that is fine.\n\nCheers,\nAl\n\nOn Tue, Mar 5, 2024 at 9:12 AM Bob <bob@stone.example> wrote:\n> Is that fine?\n",
    expected: "Hi Bob,\n\nYes, that is fine.",
  },
  {
    name: "inline reply",
    text: "On Tue, Mar 5, 2024 at 9:12 AM Bob <bob@stone.example> wrote:\n> 1. Can you send the logs?\nSent them an hour ago.\n\n> 2. Did it happen again?\nNo, not since Monday.\n",
    expected: "Sent them an hour ago.\n\nNo, not since Monday.",
  },
  {
    name: "bottom post",
    text: "Bob Stone wrote:\n> Lunch at noon?\n\nSure, see you there.\n",
    expected: "Sure, see you there.",
  },
  {
    name: "nested quotes",
    text: "Agreed with both of you.\n\nOn Tue, Mar 5, 2024 at 9:12 AM Bob <bob@stone.example> wrote:\n> I think so too.\n>\n> On Mon, Mar 4, 2024 at 5:00 PM Ann <ann@example.com> wrote:\n>> We should ship.\n",
    expected: "Agreed with both of you.",
  },
  {
    name: "gmail forward with note",
    text: "Can you handle this?\n\n---------- Forwarded message ---------\nFrom: Shop <orders@shop.example>\nDate: Tue, Mar 5, 2024 at 9:12 AM\nSubject: Order 1234\nTo: <me@example.com>\n\n\nYour order has shipped.\n",
    expected: "Can you handle this?",
  },
  {
    name: "apple forward without note",
    text: "Begin forwarded message:\n\nFrom: Shop <orders@shop.example>\nSubject: Order 1234\nDate: March 5, 2024 at 9:12:00 AM EST\nTo: me@example.com\n\nYour order has shipped.\n",
    expected: "",
  },
  {
    name: "prose mentioning wrote",
    text: "Here is what the customer wrote in the survey: the app is too slow.\nLet's discuss on Friday.",
    expected: "Here is what the customer wrote in the survey: the app is too slow.\nLet's discuss on Friday.",
  },
  {
    name: "prose with a From: line",
    text: "Please update the header of the form.\nFrom: should read Sender.\nThat is all.",
    expected: "Please update the header of the form.\nFrom: should read Sender.\nThat is all.",
  },
  {
    name: "list with dashes",
    text: "Todo:\n- buy milk\n- call Ann\n--- done ---\nThat's it.",
    expected: "Todo:\n- buy milk\n- call Ann\n--- done ---\nThat's it.",
  },
  {
    name: "thanks at the start",
    text: "Thanks for the quick reply.\n\nI will try the new version tonight.",
    expected: "Thanks for the quick reply.\n\nI will try the new version tonight.",
  },
  {
    name: "get outlook for ios",
    text: "Sure thing.\n\nGet Outlook for iOS<https://aka.ms/o0ukef>\n________________________________\nFrom: Bob Stone <bob@stone.example>\nSent: Tuesday, March 5, 2024 9:12:44 AM\nTo: me@example.com <me@example.com>\nSubject: Drinks?\n\nDrinks tonight?\n",
    expected: "Sure thing.",
  },
  {
    name: "outlook mobile, no divider",
    text: "Sure thing.\n\nFrom: Bob Stone <bob@stone.example>\nSent: Tuesday, March 5, 2024 9:12:44 AM\nTo: me@example.com\nSubject: Drinks?\n\nDrinks tonight?\n",
    expected: "Sure thing.",
  },
  {
    name: "quoted only",
    text: "> just the quote\n> nothing new\n",
    expected: "",
  },
  {
    name: "windows line endings",
    text: "Confirmed.\r\n\r\nOn Tue, Mar 5, 2024 at 9:12 AM Bob <bob@stone.example> wrote:\r\n> Confirm?\r\n",
    expected: "Confirmed.",
  },
  {
    name: "multi-paragraph reply with signature",
    text: "Hello Ann,\n\nThe first draft is attached.\n\nThe second part will follow next week, once legal has had a look.\n\nKind regards,\nTom Berg\nExample GmbH\nwww.example.com\n",
    expected:
      "Hello Ann,\n\nThe first draft is attached.\n\nThe second part will follow next week, once legal has had a look.",
  },
  {
    name: "sent from samsung",
    text: "Running late, 10 min.\n\n\nSent from my Samsung Galaxy smartphone.\n",
    expected: "Running late, 10 min.",
  },
  {
    name: "signature with phone after name",
    text: "Call me when you land.\n\nThanks,\nPriya\nMobile: +44 7700 900123\n",
    expected: "Call me when you land.",
  },
  {
    name: "prose lines starting with On",
    text: "On the whole the release went well.\n\nOn the other hand, the docs lag behind.\nOn Monday I will fix them.\n",
    expected:
      "On the whole the release went well.\n\nOn the other hand, the docs lag behind.\nOn Monday I will fix them.",
  },
  {
    name: "sender-first German attribution wrapped",
    text: "Danke, erledigt.\n\nBob Stone <bob@stone.example> schrieb am Di., 5.\nMärz 2024, 09:12:\n\n> Kannst du das prüfen?\n",
    expected: "Danke, erledigt.",
  },
  {
    name: "Outlook From wrapped onto two lines",
    text: "Forwarding to the right team.\n\nFrom: Automated Notifications \n<notifications+1234@service.example> \nSent: Tuesday, March 5, 2024 9:12 AM\nTo: Alice <alice@example.com>\nSubject: Alert\n\nDisk usage at 91%.\n",
    expected: "Forwarding to the right team.",
  },
  {
    name: "regards inside sentences",
    text: "With regards to the invoice, it is paid.\n\nAs regards the refund, it is on its way.\n",
    expected: "With regards to the invoice, it is paid.\n\nAs regards the refund, it is on its way.",
  },
  {
    name: "zoho dashed attribution",
    text: "Clearing the cache fixed it.\n\n---- On Tue, 05 Mar 2024 09:12:50 +0100 bob@stone.example wrote ----\n\nThe page is blank.\n",
    expected: "Clearing the cache fixed it.",
  },
  {
    name: "sent from in a sentence",
    text: "The file was sent from my office laptop, not my phone.\nSent from the web it should work too.",
    expected: "The file was sent from my office laptop, not my phone.\nSent from the web it should work too.",
  },
  {
    name: "lowercase original message separator",
    text: "Noted, thanks.\n\n-----original message-----\nFrom: Bob Stone\nDate: 05/03/2024 09:12\nTo: Alice\nSubject: Note\n\nPlease note the change.\n",
    expected: "Noted, thanks.",
  },
  {
    name: "quote without a header",
    text: "See answer below.\n\n> Is it ready?\n\nYes, since this morning.\n",
    expected: "See answer below.\n\nYes, since this morning.",
  },
  {
    name: "closing then device tagline",
    text: "Booked the flights.\n\nThanks,\nBob\n\nSent from my iPad\n",
    expected: "Booked the flights.",
  },
  {
    name: "French Outlook for Android",
    text: "D'accord, à demain.\n\nObtenir Outlook pour Android<https://aka.ms/ghei36>\n________________________________\nDe : Bob Stone <bob@stone.example>\nEnvoyé : mardi 5 mars 2024 09:12\nÀ : Alice <alice@example.com>\nObjet : Demain\n\nOn se voit demain ?\n",
    expected: "D'accord, à demain.",
  },
  {
    name: "French Apple Mail attribution wrapped",
    text: "Parfait.\n\n> Le 5 mars 2024 à 09:12, Roberta Stone-Whitfield <\n> roberta@stone.example> a écrit :\n> \n> Ça te va ?\n",
    expected: "Parfait.",
  },
  {
    name: "code block in reply",
    text: "Try this:\n\n    const x = a -- b;\n    if (x) return;\n\nThat should do it.",
    expected: "Try this:\n\n    const x = a -- b;\n    if (x) return;\n\nThat should do it.",
  },
];

/** One reply per language, with that language's attribution, Outlook block, tagline and closing. */
const languages: Array<{
  lang: string;
  reply: string;
  attribution: string;
  outlook: string;
  tagline: string;
  closing: string;
}> = [
  {
    lang: "German",
    reply: "Ja, Dienstag passt mir gut.",
    attribution: "Am Di., 5. März 2024 um 09:12 Uhr schrieb Bob Stone <bob@stone.example>:",
    outlook:
      "Von: Bob Stone <bob@stone.example>\nGesendet: Dienstag, 5. März 2024 09:12\nAn: Alice <alice@example.com>\nBetreff: Termin",
    tagline: "Von meinem iPhone gesendet",
    closing: "Viele Grüße\nAlice",
  },
  {
    lang: "French",
    reply: "Oui, mardi me convient.",
    attribution: "Le mar. 5 mars 2024 à 09:12, Bob Stone <bob@stone.example> a écrit :",
    outlook:
      "De : Bob Stone <bob@stone.example>\nEnvoyé : mardi 5 mars 2024 09:12\nÀ : Alice <alice@example.com>\nObjet : Rendez-vous",
    tagline: "Envoyé de mon iPhone",
    closing: "Cordialement,\nAlice Martin",
  },
  {
    lang: "Spanish",
    reply: "Sí, el martes me viene bien.",
    attribution: "El mar, 5 mar 2024 a las 9:12, Bob Stone (<bob@stone.example>) escribió:",
    outlook:
      "De: Bob Stone <bob@stone.example>\nEnviado: martes, 5 de marzo de 2024 9:12\nPara: Alice <alice@example.com>\nAsunto: Cita",
    tagline: "Enviado desde mi iPhone",
    closing: "Saludos,\nAlicia",
  },
  {
    lang: "Italian",
    reply: "Sì, martedì va bene.",
    attribution: "Il giorno mar 5 mar 2024 alle ore 09:12 Bob Stone <bob@stone.example> ha scritto:",
    outlook:
      "Da: Bob Stone <bob@stone.example>\nInviato: martedì 5 marzo 2024 09:12\nA: Alice <alice@example.com>\nOggetto: Appuntamento",
    tagline: "Inviato da iPhone",
    closing: "Cordiali saluti\nAlice Rossi",
  },
  {
    lang: "Portuguese",
    reply: "Sim, terça-feira está ótimo.",
    attribution: "Em ter., 5 de mar. de 2024 às 09:12, Bob Stone <bob@stone.example> escreveu:",
    outlook:
      "De: Bob Stone <bob@stone.example>\nEnviado: terça-feira, 5 de março de 2024 09:12\nPara: Alice <alice@example.com>\nAssunto: Reunião",
    tagline: "Enviado do meu iPhone",
    closing: "Atenciosamente,\nAlice Silva",
  },
  {
    lang: "Dutch",
    reply: "Ja, dinsdag is prima.",
    attribution: "Op di 5 mrt 2024 om 09:12 schreef Bob Stone <bob@stone.example>:",
    outlook:
      "Van: Bob Stone <bob@stone.example>\nVerzonden: dinsdag 5 maart 2024 09:12\nAan: Alice <alice@example.com>\nOnderwerp: Afspraak",
    tagline: "Verzonden vanaf mijn iPhone",
    closing: "Met vriendelijke groet,\nAlice de Vries",
  },
  {
    lang: "Japanese",
    reply: "はい、火曜日で大丈夫です。",
    attribution: "2024年3月5日(火) 9:12 Bob Stone <bob@stone.example>:",
    outlook:
      "差出人: Bob Stone <bob@stone.example>\n送信日時: 2024年3月5日 9:12\n宛先: Alice <alice@example.com>\n件名: 打ち合わせ",
    tagline: "iPhoneから送信",
    closing: "よろしくお願いします。\n山田",
  },
  {
    lang: "Chinese",
    reply: "好的，周二可以。",
    attribution: "Bob Stone <bob@stone.example> 于2024年3月5日周二 09:12写道：",
    outlook:
      "发件人: Bob Stone <bob@stone.example>\n发送时间: 2024年3月5日 9:12\n收件人: Alice <alice@example.com>\n主题: 会议",
    tagline: "发自我的iPhone",
    closing: "谢谢！\n王芳",
  },
  {
    lang: "English",
    reply: "Yes, Tuesday works.",
    attribution: "On Tue, Mar 5, 2024 at 9:12 AM Bob Stone <bob@stone.example> wrote:",
    outlook:
      "From: Bob Stone <bob@stone.example>\nSent: Tuesday, March 5, 2024 9:12 AM\nTo: Alice <alice@example.com>\nSubject: Meeting",
    tagline: "Sent from my iPhone",
    closing: "Best regards,\nAlice",
  },
];

const matrix: ReplyCase[] = languages.flatMap((l) => [
  {
    name: `${l.lang}: attribution and tagline`,
    text: `${l.reply}\n\n${l.tagline}\n\n${l.attribution}\n\n> Dienstag? / Tuesday?\n> Bob\n`,
    expected: l.reply,
  },
  {
    name: `${l.lang}: Outlook block and closing`,
    text: `${l.reply}\n\n${l.closing}\n\n________________________________\n${l.outlook}\n\nTuesday?\n`,
    expected: l.reply,
  },
  {
    name: `${l.lang}: closing only`,
    text: `${l.reply}\n\n${l.closing}\n`,
    expected: l.reply,
  },
]);

export const REPLY_CASES: readonly ReplyCase[] = [...hand, ...matrix];
