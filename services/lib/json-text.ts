/**
 * JSON typed by a person (the dashboard's route, endpoint and mapper editors): parsed strictly (no
 * comments, no trailing commas), and a syntax error is reported with its line and column, which
 * `JSON.parse`'s messages do not carry in every runtime ("JSON Parse error: Unexpected identifier").
 * The scanner is Microsoft's `jsonc-parser` (the one VS Code uses), which reports the offset of each error.
 */
import { type ParseError, parse, printParseErrorCode } from "jsonc-parser";

export type JsonText =
  | { ok: true; value: unknown }
  | { ok: false; message: string; line: number; column: number };

/** Readable names of jsonc-parser's error codes. */
const PROBLEMS: Record<string, string> = {
  InvalidSymbol: "unexpected character",
  InvalidNumberFormat: "invalid number",
  PropertyNameExpected: "a property name in double quotes is expected",
  ValueExpected: "a value is expected",
  ColonExpected: "a colon is expected",
  CommaExpected: "a comma is expected",
  CloseBraceExpected: "a closing } is expected",
  CloseBracketExpected: "a closing ] is expected",
  EndOfFileExpected: "nothing may follow the value",
  InvalidCommentToken: "comments are not allowed",
  UnexpectedEndOfComment: "unexpected end of comment",
  UnexpectedEndOfString: "the string is not closed",
  UnexpectedEndOfNumber: "unexpected end of number",
  InvalidUnicode: "invalid \\u escape",
  InvalidEscapeCharacter: "invalid escape character",
  InvalidCharacter: "invalid character in a string",
};

/** 1-based line and column of `offset` in `text`. */
export function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let start = 0;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      start = i + 1;
    }
  }
  return { line, column: offset - start + 1 };
}

/** Parses `text` as strict JSON; the first syntax error comes back with its position. */
export function parseJsonText(text: string): JsonText {
  const errors: ParseError[] = [];
  parse(text, errors, {
    disallowComments: true,
    allowTrailingComma: false,
    allowEmptyContent: false,
  });
  const first = errors[0];
  if (!first) {
    // The scanner found no error; JSON.parse builds the value and stays the final word on validity (it
    // refuses a raw control character inside a string, which the scanner only flags as a warning).
    try {
      return { ok: true, value: JSON.parse(text) };
    } catch (err) {
      return { ok: false, message: (err as Error).message, line: 1, column: 1 };
    }
  }
  const code = printParseErrorCode(first.error);
  const { line, column } = lineAndColumn(text, first.offset);
  return { ok: false, message: `${PROBLEMS[code] ?? code} at line ${line}, column ${column}`, line, column };
}
