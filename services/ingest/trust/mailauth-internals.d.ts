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
  /** A domain as DMARC compares it: lowercase A-labels, no trailing dot. */
  export function formatDomain(domain: string): string;
}

/**
 * mailauth's DKIM verifier, driven directly by smtp-verify.ts: `emitHeaders` takes the header section
 * (through its empty line), `nextChunk` body bytes, `finalChunk` checks the signatures.
 */
declare module "mailauth/lib/dkim/dkim-verifier" {
  import type { ARCData, DKIMResult } from "mailauth";
  export class DkimVerifier {
    constructor(options: {
      resolver: (name: string, rrtype?: string) => Promise<unknown>;
      sender?: string | undefined;
      /** false: no Authentication-Results text per result (`info`); a patch of ours (patches/) */
      formatResults?: boolean;
    });
    emitHeaders(chunk?: Buffer): Promise<void>;
    nextChunk(chunk: Buffer): Promise<void>;
    finalChunk(): Promise<void>;
    results: DKIMResult[];
    /** the From addresses, for DMARC */
    headerFrom: string[];
    fromFields: number;
    /** the ARC chain read from the header section, for `arc()` */
    arc: ARCData;
  }
}

/** DMARC's evaluation from SPF's and DKIM's results, as mailauth's `authenticate()` calls it. */
declare module "mailauth/lib/dmarc" {
  import type { ARCResult, DMARCResult } from "mailauth";
  export function evaluateDmarc(opts: {
    headerFrom: string[];
    fromFields: number;
    spfDomains: string[];
    dkimDomains: { id?: string; domain?: string; aligned?: string | false; underSized?: number }[];
    arcResult: ARCResult | undefined;
    resolver: (name: string, rrtype?: string) => Promise<unknown>;
    strict: boolean;
    /** false: no Authentication-Results text (`info`); a patch of ours (patches/) */
    formatResults?: boolean;
  }): Promise<{ response: DMARCResult | false; dkimAligned?: Set<string>; reason?: string }>;
}
