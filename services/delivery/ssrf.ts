/**
 * The SSRF guard lives in lib/ssrf.ts: delivery applies it where it dials, and the endpoints resource
 * applies its address ranges when a URL is saved.
 */
export * from "../lib/ssrf.ts";
