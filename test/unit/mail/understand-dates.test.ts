/** The dates of forwarded header blocks, as each client and language writes them. */
import { expect, test } from "bun:test";
import { forwardedDate } from "../../../services/mail/understand/dates.ts";

test.each([
  ["Gmail", "Mon, Jan 8, 2024 at 9:00 AM", "2024-01-08T09:00:00Z"],
  ["Outlook, afternoon", "Monday, January 8, 2024 10:15 PM", "2024-01-08T22:15:00Z"],
  ["Apple Mail with a zone name", "January 8, 2024 at 9:00:00 AM PST", "2024-01-08T17:00:00Z"],
  ["RFC 5322 with an offset", "Mon, 8 Jan 2024 09:00:00 +0100", "2024-01-08T08:00:00Z"],
  ["German Apple Mail", "8. Januar 2024 um 09:00:00 MEZ", "2024-01-08T08:00:00Z"],
  ["German Outlook", "Montag, 8. Januar 2024 10:15", "2024-01-08T10:15:00Z"],
  ["French Gmail", "lun. 8 janv. 2024 à 09:00", "2024-01-08T09:00:00Z"],
  ["Spanish Outlook", "lunes, 8 de enero de 2024 9:12", "2024-01-08T09:12:00Z"],
  ["Italian Outlook", "lunedì 8 gennaio 2024 10:15", "2024-01-08T10:15:00Z"],
  ["Portuguese Outlook", "segunda-feira, 8 de janeiro de 2024 10:15", "2024-01-08T10:15:00Z"],
  ["Dutch Outlook", "maandag 8 januari 2024 10:15", "2024-01-08T10:15:00Z"],
  ["Japanese", "2024年1月8日 10:15", "2024-01-08T10:15:00Z"],
  ["Chinese, afternoon", "2024年1月8日(星期一) 下午3:15", "2024-01-08T15:15:00Z"],
  ["ISO", "2024-01-08 09:00", "2024-01-08T09:00:00Z"],
  ["all numbers: day or month first is unknown", "05/03/2024 09:12", null],
  ["no date", "yesterday", null],
  ["absent", undefined, null],
])("%s", (_name, value, expected) => {
  expect(forwardedDate(value)).toBe(expected);
});
