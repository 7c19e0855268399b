/**
 * Types of the two mailauth modules the trust code uses beyond its typed entry point: its RFC 8601
 * header parser and its RFC 5322 header splitter, plus DMARC's alignment test.
 */
declare module "mailauth/lib/parse-dkim-headers" {
  /** One method's result: `value` is the result word; `ptype.property` pairs are nested objects. */
  export interface ParsedResinfo {
    value: string;
    comment?: string;
    [ptype: string]: string | Record<string, string> | undefined;
  }
  export interface ParsedAuthResults {
    header: string;
    /** the authserv-id (and its version, if any) */
    value: string;
    dkim?: ParsedResinfo[];
    [method: string]: ParsedResinfo | ParsedResinfo[] | string | undefined;
  }
  export default function headerParser(line: string | Buffer): { parsed: ParsedAuthResults };
}

declare module "mailauth/lib/tools" {
  /** The header block of a message split into fields, top first; `line` is the whole field as written. */
  export function parseHeaders(buf: Buffer): {
    parsed: { key: string; casedKey: string; line: Buffer }[];
  };
  /** The first of `domains` aligned with `fromDomain` (relaxed: same Organizational Domain), or false. */
  export function getAlignment(
    fromDomain: string,
    domains: string[],
    strict?: boolean,
  ): { domain: string } | false;
}
