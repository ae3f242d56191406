import { z } from 'zod';

/**
 * The SCIM schemas this service implements (RFC 7643 §4 and §8.7), declared once: they are served at /Schemas,
 * and the filter compiler, the PATCH engine, input parsing and attribute projection all read their
 * characteristics (type, multiValued, caseExact, mutability, returned) from here.
 */

export const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const ENTERPRISE_USER_SCHEMA = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
export const LIST_RESPONSE_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
export const PATCH_OP_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
export const SEARCH_REQUEST_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:SearchRequest';
export const BULK_REQUEST_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:BulkRequest';
export const BULK_RESPONSE_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:BulkResponse';
export const ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';
export const SERVICE_PROVIDER_CONFIG_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig';
export const RESOURCE_TYPE_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:ResourceType';
export const SCHEMA_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Schema';

export const SCIM_CONTENT_TYPE = 'application/scim+json; charset=utf-8';
/** Media types a SCIM request body may arrive in (RFC 7644 §8.1 names both). */
export const SCIM_BODY_TYPES = ['application/scim+json', 'application/json'];

/** RFC 7644 §3.4.2.4 paging bounds, as the spec states them. */
export const DEFAULT_COUNT = 100;
export const MAX_COUNT = 1000;
/** RFC 7644 §3.7.4: the most operations one Bulk request may carry (advertised in /ServiceProviderConfig). */
export const BULK_MAX_OPERATIONS = 1000;

export type AttributeType =
  'string' | 'boolean' | 'decimal' | 'integer' | 'dateTime' | 'reference' | 'binary' | 'complex';
export type Mutability = 'readOnly' | 'readWrite' | 'immutable' | 'writeOnly';
export type Returned = 'always' | 'never' | 'default' | 'request';

/** An attribute definition with the characteristics of RFC 7643 §2.2 and §7. */
export interface AttributeDef {
  name: string;
  type: AttributeType;
  multiValued: boolean;
  description: string;
  required: boolean;
  caseExact: boolean;
  mutability: Mutability;
  returned: Returned;
  uniqueness: 'none' | 'server' | 'global';
  canonicalValues?: string[];
  referenceTypes?: string[];
  subAttributes?: AttributeDef[];
}

export interface SchemaDef {
  id: string;
  name: string;
  description: string;
  attributes: AttributeDef[];
}

/** A resource type: its core schema, its extensions, and the common attributes every resource has (§3.1). */
export interface ResourceDef {
  name: 'User' | 'Group';
  endpoint: '/Users' | '/Groups';
  description: string;
  core: SchemaDef;
  extensions: SchemaDef[];
  common: AttributeDef[];
}

type Options = Partial<Omit<AttributeDef, 'name' | 'type' | 'description'>>;

/** RFC 7643 §2.2 defaults: optional, case-insensitive, read-write, returned by default, not unique. */
function attribute(name: string, type: AttributeType, description: string, options: Options = {}): AttributeDef {
  return {
    name,
    type,
    multiValued: false,
    description,
    required: false,
    caseExact: false,
    mutability: 'readWrite',
    returned: 'default',
    uniqueness: 'none',
    ...options,
  };
}

function complex(name: string, description: string, subAttributes: AttributeDef[], options: Options = {}) {
  return attribute(name, 'complex', description, { ...options, subAttributes });
}

/** The value/display/type/primary shape of most multi-valued User attributes (§2.4). */
function plural(name: string, description: string, types: string[] | undefined, valueType: AttributeType = 'string') {
  const valueOptions: Options =
    valueType === 'reference' ? { referenceTypes: ['external'] } : valueType === 'binary' ? { caseExact: true } : {};
  return complex(
    name,
    description,
    [
      attribute('value', valueType, `The value of ${name}.`, valueOptions),
      attribute('display', 'string', 'A human-readable name, primarily used for display purposes. READ-ONLY.'),
      attribute(
        'type',
        'string',
        "A label indicating the attribute's function.",
        types ? { canonicalValues: types } : {},
      ),
      attribute('primary', 'boolean', "Whether this is the 'primary' or preferred value. 'true' appears at most once."),
    ],
    { multiValued: true },
  );
}

const readOnly: Options = { mutability: 'readOnly' };

export const USER_SCHEMA_DEF: SchemaDef = {
  id: USER_SCHEMA,
  name: 'User',
  description: 'User Account',
  attributes: [
    attribute('userName', 'string', 'Unique identifier for the User, used to sign in. REQUIRED.', {
      required: true,
      uniqueness: 'server',
    }),
    complex('name', "The components of the user's real name.", [
      attribute(
        'formatted',
        'string',
        'The full name, formatted for display. Kept in step with givenName and familyName.',
      ),
      attribute('familyName', 'string', 'The family name of the User.'),
      attribute('givenName', 'string', 'The given name of the User.'),
      attribute('middleName', 'string', 'The middle name(s) of the User.'),
      attribute('honorificPrefix', 'string', 'The honorific prefix(es) of the User.'),
      attribute('honorificSuffix', 'string', 'The honorific suffix(es) of the User.'),
    ]),
    attribute('displayName', 'string', 'The name of the User, suitable for display to end-users.'),
    attribute('nickName', 'string', 'The casual way to address the user in real life.'),
    attribute('profileUrl', 'reference', "A fully qualified URL pointing to the User's online profile.", {
      referenceTypes: ['external'],
    }),
    attribute('title', 'string', "The user's title, such as 'Vice President'."),
    attribute('userType', 'string', 'Identifies the relationship between the organization and the user.'),
    attribute('preferredLanguage', 'string', "The User's preferred written or spoken language (RFC 7231 §5.3.5)."),
    attribute('locale', 'string', "The User's default location, e.g. 'en-US'."),
    attribute('timezone', 'string', "The User's time zone in the 'Olson' time zone database format."),
    attribute('active', 'boolean', "The User's administrative status: false stops sign-in and every credential."),
    attribute('password', 'string', "The User's cleartext password. Write-only: it is hashed and never returned.", {
      mutability: 'writeOnly',
      returned: 'never',
    }),
    plural('emails', 'Email addresses for the user. The primary (or first) one is the sign-in email.', [
      'work',
      'home',
      'other',
    ]),
    plural('phoneNumbers', 'Phone numbers for the User.', ['work', 'home', 'mobile', 'fax', 'pager', 'other']),
    plural('ims', 'Instant messaging addresses for the User.', [
      'aim',
      'gtalk',
      'icq',
      'xmpp',
      'msn',
      'skype',
      'qq',
      'yahoo',
    ]),
    plural('photos', 'URLs of photos of the User.', ['photo', 'thumbnail'], 'reference'),
    complex(
      'addresses',
      'A physical mailing address for this User.',
      [
        attribute('formatted', 'string', 'The full mailing address, formatted for display.'),
        attribute('streetAddress', 'string', 'The full street address component.'),
        attribute('locality', 'string', 'The city or locality component.'),
        attribute('region', 'string', 'The state or region component.'),
        attribute('postalCode', 'string', 'The zip code or postal code component.'),
        attribute('country', 'string', 'The country name component (ISO 3166-1 alpha-2).'),
        attribute('type', 'string', "A label indicating the attribute's function.", {
          canonicalValues: ['work', 'home', 'other'],
        }),
        attribute('primary', 'boolean', "Whether this is the 'primary' or preferred address."),
      ],
      { multiValued: true },
    ),
    complex(
      'groups',
      'The groups the user belongs to. Read-only: change membership through the Group resource.',
      [
        attribute('value', 'string', "The identifier of the User's group.", readOnly),
        attribute('$ref', 'reference', "The URI of the corresponding 'Group' resource.", {
          ...readOnly,
          referenceTypes: ['User', 'Group'],
        }),
        attribute('display', 'string', 'A human-readable name, primarily used for display purposes.', readOnly),
        attribute('type', 'string', "'direct' or 'indirect' membership.", {
          ...readOnly,
          canonicalValues: ['direct', 'indirect'],
        }),
      ],
      { multiValued: true, mutability: 'readOnly' },
    ),
    plural('entitlements', 'Entitlements of the User (stored as given; they grant nothing here).', undefined),
    plural('roles', 'Roles of the User (stored as given; authorization roles are not managed through SCIM).', []),
    plural('x509Certificates', 'X.509 certificates issued to the User.', [], 'binary'),
  ],
};

export const ENTERPRISE_USER_SCHEMA_DEF: SchemaDef = {
  id: ENTERPRISE_USER_SCHEMA,
  name: 'EnterpriseUser',
  description: 'Enterprise User',
  attributes: [
    attribute('employeeNumber', 'string', 'Identifier assigned to a person, typically based on order of hire.'),
    attribute('costCenter', 'string', 'Identifies the name of a cost center.'),
    attribute('organization', 'string', 'Identifies the name of an organization.'),
    attribute('division', 'string', 'Identifies the name of a division.'),
    attribute('department', 'string', 'Identifies the name of a department.'),
    complex('manager', "The User's manager: the id of another User.", [
      attribute('value', 'string', "The id of the SCIM resource representing the User's manager."),
      attribute('$ref', 'reference', "The URI of the SCIM resource representing the User's manager.", {
        referenceTypes: ['User'],
      }),
      attribute('displayName', 'string', "The displayName of the User's manager.", readOnly),
    ]),
  ],
};

export const GROUP_SCHEMA_DEF: SchemaDef = {
  id: GROUP_SCHEMA,
  name: 'Group',
  description: 'Group',
  attributes: [
    attribute('displayName', 'string', 'A human-readable name for the Group. REQUIRED.', { required: true }),
    complex(
      'members',
      'The members of the Group: Users (nested groups are not supported).',
      [
        attribute('value', 'string', 'Identifier of the member of this Group.', { mutability: 'immutable' }),
        attribute('display', 'string', 'Human-readable name of the member of this Group.', { mutability: 'immutable' }),
        attribute('$ref', 'reference', 'The URI corresponding to a SCIM resource that is a member of this Group.', {
          mutability: 'immutable',
          referenceTypes: ['User', 'Group'],
        }),
        attribute('type', 'string', "The type of the member: 'User'.", {
          mutability: 'immutable',
          canonicalValues: ['User', 'Group'],
        }),
      ],
      { multiValued: true },
    ),
  ],
};

/** id, externalId and meta (RFC 7643 §3.1): part of every resource, not of any schema. */
const COMMON_ATTRIBUTES: AttributeDef[] = [
  attribute('id', 'string', 'Unique identifier assigned by the service provider.', {
    caseExact: true,
    mutability: 'readOnly',
    returned: 'always',
    uniqueness: 'server',
  }),
  attribute('externalId', 'string', "The provisioning client's identifier for the resource.", { caseExact: true }),
  complex(
    'meta',
    'Resource metadata.',
    [
      attribute('resourceType', 'string', 'The name of the resource type.', { ...readOnly, caseExact: true }),
      attribute('created', 'dateTime', 'When the resource was added.', readOnly),
      attribute('lastModified', 'dateTime', 'When the resource was last changed.', readOnly),
      attribute('location', 'reference', 'The URI of the resource.', { ...readOnly, caseExact: true }),
      attribute('version', 'string', 'The version (ETag) of the resource.', { ...readOnly, caseExact: true }),
    ],
    readOnly,
  ),
];

export const USER_RESOURCE: ResourceDef = {
  name: 'User',
  endpoint: '/Users',
  description: 'User Account',
  core: USER_SCHEMA_DEF,
  extensions: [ENTERPRISE_USER_SCHEMA_DEF],
  common: COMMON_ATTRIBUTES,
};

export const GROUP_RESOURCE: ResourceDef = {
  name: 'Group',
  endpoint: '/Groups',
  description: 'Group',
  core: GROUP_SCHEMA_DEF,
  extensions: [],
  common: COMMON_ATTRIBUTES,
};

export const SCHEMA_DEFS: SchemaDef[] = [USER_SCHEMA_DEF, ENTERPRISE_USER_SCHEMA_DEF, GROUP_SCHEMA_DEF];

/** Finds a sub-attribute (or attribute) by name, case-insensitively (RFC 7643 §2.1). */
export function findAttribute(attributes: readonly AttributeDef[], name: string): AttributeDef | undefined {
  const wanted = name.toLowerCase();
  return attributes.find((a) => a.name.toLowerCase() === wanted);
}

/** The schema of a resource with this URN, case-insensitively. */
export function findSchema(resource: ResourceDef, urn: string): SchemaDef | undefined {
  const wanted = urn.toLowerCase();
  return [resource.core, ...resource.extensions].find((s) => s.id.toLowerCase() === wanted);
}

// ---------------------------------------------------------------------------------------------------------------
// Discovery documents (RFC 7644 §4, RFC 7643 §5-7)

export interface DiscoveryOptions {
  /** Absolute base of the SCIM endpoints: `https://agent.example.com/scim/v2`. */
  baseUrl: string;
  documentationUrl: string;
  maxPayloadSize: number;
}

export function serviceProviderConfig(options: DiscoveryOptions) {
  return {
    schemas: [SERVICE_PROVIDER_CONFIG_SCHEMA],
    documentationUri: options.documentationUrl,
    patch: { supported: true },
    bulk: { supported: true, maxOperations: BULK_MAX_OPERATIONS, maxPayloadSize: options.maxPayloadSize },
    filter: { supported: true, maxResults: MAX_COUNT },
    changePassword: { supported: true },
    sort: { supported: true },
    etag: { supported: false },
    authenticationSchemes: [
      {
        type: 'oauthbearertoken',
        name: 'OAuth Bearer Token',
        description:
          'An access token of an administrator, or of a service principal granted the provisioner relation on ' +
          'system:global (POST /auth/token with client credentials).',
        specUri: 'https://www.rfc-editor.org/info/rfc6750',
        documentationUri: options.documentationUrl,
      },
    ],
    meta: { resourceType: 'ServiceProviderConfig', location: `${options.baseUrl}/ServiceProviderConfig` },
  };
}

export function resourceTypeDocument(resource: ResourceDef, baseUrl: string) {
  return {
    schemas: [RESOURCE_TYPE_SCHEMA],
    id: resource.name,
    name: resource.name,
    endpoint: resource.endpoint,
    description: resource.description,
    schema: resource.core.id,
    ...(resource.extensions.length > 0 && {
      schemaExtensions: resource.extensions.map((e) => ({ schema: e.id, required: false })),
    }),
    meta: { resourceType: 'ResourceType', location: `${baseUrl}/ResourceTypes/${resource.name}` },
  };
}

/** An attribute as /Schemas describes it: complex attributes carry sub-attributes instead of string traits. */
function describeAttribute(a: AttributeDef): Record<string, unknown> {
  const base: Record<string, unknown> = {
    name: a.name,
    type: a.type,
    multiValued: a.multiValued,
    description: a.description,
    required: a.required,
  };
  // As RFC 7643 §8.7.1 writes them: complex attributes carry sub-attributes, booleans no caseExact or uniqueness.
  if (a.type === 'complex') base.subAttributes = (a.subAttributes ?? []).map(describeAttribute);
  else if (a.type !== 'boolean') base.caseExact = a.caseExact;
  if (a.canonicalValues) base.canonicalValues = a.canonicalValues;
  if (a.referenceTypes) base.referenceTypes = a.referenceTypes;
  base.mutability = a.mutability;
  base.returned = a.returned;
  if (a.type !== 'boolean') base.uniqueness = a.uniqueness;
  return base;
}

export function schemaDocument(schema: SchemaDef, baseUrl: string) {
  return {
    schemas: [SCHEMA_SCHEMA],
    id: schema.id,
    name: schema.name,
    description: schema.description,
    attributes: schema.attributes.map(describeAttribute),
    meta: { resourceType: 'Schema', location: `${baseUrl}/Schemas/${schema.id}` },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// zod schemas: what the routes document in OpenAPI. Requests are parsed by the service (SCIM attribute names are
// case-insensitive and real clients send strings for booleans), so request schemas only fix the outer shape.

// A property named `$ref` (SCIM's reference sub-attribute) reads as a JSON reference to OpenAPI tooling, so the
// documented shapes leave it out and name it in prose.
const REF_NOTE = (what: string) => `Also "$ref": the URI of ${what}.`;

const Meta = z
  .object({
    resourceType: z.string(),
    created: z.iso.datetime(),
    lastModified: z.iso.datetime(),
    location: z.string(),
  })
  .meta({ id: 'ScimMeta' });

const MultiValue = z
  .object({
    value: z.string(),
    display: z.string().optional(),
    type: z.string().optional(),
    primary: z.boolean().optional(),
  })
  .meta({ id: 'ScimMultiValue' });

const Name = z
  .object({
    formatted: z.string().optional(),
    familyName: z.string().optional(),
    givenName: z.string().optional(),
    middleName: z.string().optional(),
    honorificPrefix: z.string().optional(),
    honorificSuffix: z.string().optional(),
  })
  .meta({ id: 'ScimName' });

const Address = z
  .object({
    formatted: z.string().optional(),
    streetAddress: z.string().optional(),
    locality: z.string().optional(),
    region: z.string().optional(),
    postalCode: z.string().optional(),
    country: z.string().optional(),
    type: z.string().optional(),
    primary: z.boolean().optional(),
  })
  .meta({ id: 'ScimAddress' });

const EnterpriseUser = z
  .object({
    employeeNumber: z.string().optional(),
    costCenter: z.string().optional(),
    organization: z.string().optional(),
    division: z.string().optional(),
    department: z.string().optional(),
    manager: z
      .looseObject({ value: z.string(), displayName: z.string().optional() })
      .describe(REF_NOTE('the manager'))
      .optional(),
  })
  .meta({ id: 'ScimEnterpriseUser' });

const userAttributes = {
  externalId: z.string().optional(),
  userName: z.string(),
  name: Name.optional(),
  displayName: z.string().optional(),
  nickName: z.string().optional(),
  profileUrl: z.string().optional(),
  title: z.string().optional(),
  userType: z.string().optional(),
  preferredLanguage: z.string().optional(),
  locale: z.string().optional(),
  timezone: z.string().optional(),
  active: z.boolean(),
  emails: z.array(MultiValue).optional(),
  phoneNumbers: z.array(MultiValue).optional(),
  ims: z.array(MultiValue).optional(),
  photos: z.array(MultiValue).optional(),
  addresses: z.array(Address).optional(),
  entitlements: z.array(MultiValue).optional(),
  roles: z.array(MultiValue).optional(),
  x509Certificates: z.array(MultiValue).optional(),
  [ENTERPRISE_USER_SCHEMA]: EnterpriseUser.optional(),
};

export const ScimUser = z
  .object({
    schemas: z.array(z.string()),
    id: z.string(),
    ...userAttributes,
    groups: z
      .array(
        z
          .looseObject({ value: z.string(), display: z.string(), type: z.literal('direct') })
          .describe(REF_NOTE('the Group')),
      )
      .optional(),
    meta: Meta,
  })
  .meta({ id: 'ScimUser', description: 'A User (RFC 7643 §4.1); attributes may be narrowed by `attributes`.' });

/**
 * Request bodies are checked here only for being JSON objects: the service parses them the SCIM way (attribute
 * names in any case, "True"/"False" strings for booleans, null for "unassigned") and answers SCIM errors.
 */
export const ScimUserRequest = z.looseObject({}).meta({
  id: 'ScimUserRequest',
  description: `A User (attributes as in ScimUser; schemas must include ${USER_SCHEMA}; userName is required; password is write-only).`,
  examples: [
    {
      schemas: [USER_SCHEMA],
      userName: 'bjensen@example.com',
      name: { givenName: 'Barbara', familyName: 'Jensen' },
      emails: [{ value: 'bjensen@example.com', type: 'work', primary: true }],
      active: true,
      password: 'correct horse battery',
    },
  ],
});

const Member = z
  .looseObject({ value: z.string(), display: z.string().optional(), type: z.string().optional() })
  .describe(REF_NOTE('the User'))
  .meta({ id: 'ScimMember' });

export const ScimGroup = z
  .object({
    schemas: z.array(z.string()),
    id: z.string(),
    externalId: z.string().optional(),
    displayName: z.string(),
    members: z.array(Member).optional(),
    meta: Meta,
  })
  .meta({ id: 'ScimGroup', description: 'A Group (RFC 7643 §4.2); its members are Users.' });

export const ScimGroupRequest = z.looseObject({}).meta({
  id: 'ScimGroupRequest',
  description: `A Group (schemas must include ${GROUP_SCHEMA}; displayName is required; members are User ids).`,
  examples: [{ schemas: [GROUP_SCHEMA], displayName: 'Engineering', members: [{ value: '<user id>' }] }],
});

export const ScimPatchRequest = z.looseObject({}).meta({
  id: 'ScimPatchOp',
  description: `A PatchOp (RFC 7644 §3.5.2): schemas must include ${PATCH_OP_SCHEMA}; Operations are applied in order, all or nothing.`,
  examples: [
    {
      schemas: [PATCH_OP_SCHEMA],
      Operations: [
        { op: 'replace', path: 'active', value: false },
        { op: 'add', path: 'members', value: [{ value: '<user id>' }] },
        { op: 'remove', path: 'members[value eq "<user id>"]' },
      ],
    },
  ],
});

export const ScimSearchRequest = z.looseObject({}).meta({
  id: 'ScimSearchRequest',
  description: `A SearchRequest (RFC 7644 §3.4.3): schemas must include ${SEARCH_REQUEST_SCHEMA}; filter, sortBy, sortOrder, startIndex, count, attributes, excludedAttributes as for GET.`,
});

export const listResponseSchema = (item: z.ZodType, id: string) =>
  z
    .object({
      schemas: z.array(z.literal(LIST_RESPONSE_SCHEMA)),
      totalResults: z.number().int(),
      startIndex: z.number().int(),
      itemsPerPage: z.number().int(),
      Resources: z.array(item),
    })
    .meta({ id });

export const ScimBulkRequest = z.looseObject({}).meta({
  id: 'ScimBulkRequest',
  description: `A BulkRequest (RFC 7644 §3.7): schemas must include ${BULK_REQUEST_SCHEMA}; at most ${BULK_MAX_OPERATIONS} Operations of method POST (with a bulkId), PUT, PATCH or DELETE on /Users or /Groups; "bulkId:<id>" refers to a resource created in the same request; failOnErrors stops after that many failures.`,
  examples: [
    {
      schemas: [BULK_REQUEST_SCHEMA],
      failOnErrors: 1,
      Operations: [
        { method: 'POST', path: '/Users', bulkId: 'u1', data: { schemas: [USER_SCHEMA], userName: 'alice' } },
        {
          method: 'POST',
          path: '/Groups',
          bulkId: 'g1',
          data: { schemas: [GROUP_SCHEMA], displayName: 'Admins', members: [{ value: 'bulkId:u1' }] },
        },
      ],
    },
  ],
});

export const ScimBulkResponse = z
  .object({
    schemas: z.array(z.literal(BULK_RESPONSE_SCHEMA)),
    Operations: z.array(
      z.object({
        method: z.string(),
        bulkId: z.string().optional(),
        location: z.string().optional(),
        status: z.string().describe('HTTP status of the operation, as a string (RFC 7644 §3.7.3)'),
        response: z.unknown().optional().describe('The SCIM error of a failed operation'),
      }),
    ),
  })
  .meta({ id: 'ScimBulkResponse' });

export const ScimDocument = z.looseObject({ schemas: z.array(z.string()) }).meta({ id: 'ScimDiscoveryDocument' });
