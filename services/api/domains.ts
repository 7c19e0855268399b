/** A project's own domains and addresses (docs/api.md, "Domains and addresses"; docs/ingest.md). */
import { Elysia, t } from "elysia";
import type { AppContext } from "../context.ts";
import {
  AddressViewSchema,
  createAddress,
  createDomain,
  DomainViewSchema,
  deleteAddress,
  deleteDomain,
  getAddress,
  getDomain,
  listAddresses,
  listDomains,
  updateDomain,
  verifyDomain,
} from "../resources/domains.ts";
import { projectAuth } from "./auth.ts";
import { authErrors, ErrorBody, IdParam, Items, named, validationErrors } from "./schemas.ts";

const security = [{ apiKey: [] }];

export const Domain = named("Domain", DomainViewSchema);
export const Address = named("Address", AddressViewSchema);

const DomainInput = t.Object(
  {
    domain: t.String({ maxLength: 300, description: "e.g. example.com (an IDN is stored as punycode)" }),
    catch_all: t.Optional(t.Boolean({ default: false, description: "accept any local part at the domain" })),
  },
  { additionalProperties: false },
);
const DomainPatch = t.Object({ catch_all: t.Optional(t.Boolean()) }, { additionalProperties: false });
const AddressInput = t.Object(
  { address: t.String({ maxLength: 400, description: "local@domain, at a verified domain of the project" }) },
  { additionalProperties: false },
);

export function domainsApi(ctx: AppContext) {
  return new Elysia({ tags: ["domains"] })
    .use(projectAuth(ctx))
    .get("/domains", async ({ auth }) => ({ items: await listDomains(ctx, auth.projectId) }), {
      response: { 200: Items(Domain), ...authErrors },
      detail: { summary: "List the project's own domains", security },
    })
    .post(
      "/domains",
      async ({ auth, body, status }) => status(201, await createDomain(ctx, auth.projectId, body)),
      {
        body: DomainInput,
        response: { 201: Domain, 409: ErrorBody, ...authErrors, ...validationErrors },
        detail: {
          summary:
            "Add a domain (unverified; `dns` lists the MX and TXT records to set, then verify it). 409 domains.taken when the project has it or another project verified it",
          security,
        },
      },
    )
    .get("/domains/:id", ({ auth, params }) => getDomain(ctx, auth.projectId, params.id), {
      params: IdParam,
      response: { 200: Domain, 404: ErrorBody, ...authErrors },
      detail: { summary: "Get a domain", security },
    })
    .patch("/domains/:id", ({ auth, params, body }) => updateDomain(ctx, auth.projectId, params.id, body), {
      params: IdParam,
      body: DomainPatch,
      response: { 200: Domain, 404: ErrorBody, ...authErrors, ...validationErrors },
      detail: { summary: "Turn catch-all on or off", security },
    })
    .post("/domains/:id/verify", ({ auth, params }) => verifyDomain(ctx, auth.projectId, params.id), {
      params: IdParam,
      response: {
        200: Domain,
        404: ErrorBody,
        409: ErrorBody,
        422: ErrorBody,
        502: ErrorBody,
        ...authErrors,
      },
      detail: {
        summary:
          "Check the domain's MX and `_mailhook.<domain>` TXT records (via DNS_SERVERS): 200 verified, 422 domains.mx_mismatch or domains.txt_missing naming the records to set, 409 domains.taken when another project verified it first, 502 domains.dns_failed",
        security,
      },
    })
    .delete(
      "/domains/:id",
      async ({ auth, params, set }) => {
        await deleteDomain(ctx, auth.projectId, params.id);
        set.status = 204;
      },
      {
        params: IdParam,
        response: { 204: t.Void(), 404: ErrorBody, ...authErrors },
        detail: {
          summary: "Delete a domain and its addresses (their mail is refused from then on)",
          security,
        },
      },
    )
    .get("/addresses", async ({ auth }) => ({ items: await listAddresses(ctx, auth.projectId) }), {
      response: { 200: Items(Address), ...authErrors },
      detail: { summary: "List the project's addresses at its own domains", security },
    })
    .post(
      "/addresses",
      async ({ auth, body, status }) => status(201, await createAddress(ctx, auth.projectId, body)),
      {
        body: AddressInput,
        response: { 201: Address, 409: ErrorBody, ...authErrors, ...validationErrors },
        detail: { summary: "Add an address at a verified domain of the project", security },
      },
    )
    .get("/addresses/:id", ({ auth, params }) => getAddress(ctx, auth.projectId, params.id), {
      params: IdParam,
      response: { 200: Address, 404: ErrorBody, ...authErrors },
      detail: { summary: "Get an address", security },
    })
    .delete(
      "/addresses/:id",
      async ({ auth, params, set }) => {
        await deleteAddress(ctx, auth.projectId, params.id);
        set.status = 204;
      },
      {
        params: IdParam,
        response: { 204: t.Void(), 404: ErrorBody, ...authErrors },
        detail: { summary: "Delete an address (its mail is refused from then on)", security },
      },
    );
}
