/**
 * The shapes of a route's attachment policy and of the notes an event keeps about it (docs/routing.md,
 * "Attachment policy"), declared here so the database schema and the API views share them; the policy
 * is judged in services/mail/policy.ts.
 */

/** What a route does with an attachment that breaks its policy. */
export const POLICY_ACTIONS = ["discard", "strip", "deliver"] as const;
export type PolicyAction = (typeof POLICY_ACTIONS)[number];

/** A route's attachment policy; a route without one has the service-wide policy. */
export interface AttachmentPolicy {
  allowed_prefixes: string[];
  on_disallowed: PolicyAction;
  on_mismatch: PolicyAction;
}

/** Why one attachment broke a route's policy and what was done with it (an event's `policy_notes`). */
export interface PolicyNote {
  attachment_id: string;
  filename: string;
  reason: "disallowed_attachment_type" | "content_type_mismatch";
  action: "strip" | "deliver";
  detail: string;
}
