import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { EvictedSession, SessionRecord, SessionStore } from './port.js';

/*
 * Layout, under the caller's prefix:
 *   sess:<id>              hash  json (the record as created), userId, lastAccessedAt, idleTimeoutMs, expiresAt,
 *                                secretHash (kept as the eviction's, should the session be evicted)
 *   user-sess:<userId>     zset  session ids scored by createdAt
 *   evicted:<id>           hash  userId, secretHash, evictedAt, until: a session the limit evicted, until it would
 *                                have ended by itself
 *   user-evicted:<userId>  zset  the user's evicted session ids scored by until, so erasure can forget them
 *
 * The record stays JSON, but the fields the scripts judge expiry by sit beside it as plain numbers: Lua then
 * never has to decode and re-encode the caller's JSON (cjson rounds numbers to 14 digits and rejects some
 * strings JSON.stringify writes), and `touch` rewrites one field instead of the whole record.
 *
 * Every operation is one Lua script judging expiry by the `now` the caller passes, so a fake clock works and
 * a read, its pruning and its writes happen as one step. Key TTLs only clean up what nobody reads again; they
 * are set from the same remaining time, never shorter. Scripts build session keys from the prefix, so the
 * store needs a single Redis (not a cluster) and a client without ioredis' own keyPrefix.
 */

/** Lua shared by the scripts: expiry of a session hash and the walk over a user's index. */
const PRELUDE = `
local function deadline(last, idle, expires)
  return math.min(tonumber(last) + tonumber(idle), tonumber(expires))
end

local function ttl(until_, now)
  return math.max(1, math.ceil(until_ - now))
end

-- The user's live session ids, oldest first, with their deadlines. Drops index entries whose session is gone
-- or now belongs to another user, and deletes sessions that are dead by 'now'.
local function live_sessions(user_key, user_id, sess_prefix, now)
  local ids, deadlines = {}, {}
  for _, id in ipairs(redis.call('ZRANGE', user_key, 0, -1)) do
    local key = sess_prefix .. id
    local f = redis.call('HMGET', key, 'userId', 'lastAccessedAt', 'idleTimeoutMs', 'expiresAt')
    if f[1] ~= user_id then
      redis.call('ZREM', user_key, id)
    else
      local d = deadline(f[2], f[3], f[4])
      if d <= now then
        redis.call('DEL', key)
        redis.call('ZREM', user_key, id)
      else
        table.insert(ids, id)
        table.insert(deadlines, d)
      end
    end
  end
  return ids, deadlines
end

-- The index lives as long as its longest-lived session.
local function expire_index(user_key, deadlines, from, now)
  local last = nil
  for i = from, #deadlines do
    if last == nil or deadlines[i] > last then last = deadlines[i] end
  end
  if last == nil then
    redis.call('DEL', user_key)
  else
    redis.call('PEXPIRE', user_key, ttl(last, now))
  end
end
`;

/**
 * KEYS: session, user index, user's evictions. ARGV: id, json, userId, createdAt, lastAccessedAt, idleTimeoutMs,
 * expiresAt, maxPerUser, now, session key prefix, user index prefix, eviction key prefix, secretHash. Returns the
 * evicted ids.
 */
const CREATE = `${PRELUDE}
local sess_key, user_key, evictions_key = KEYS[1], KEYS[2], KEYS[3]
local id, user_id = ARGV[1], ARGV[3]
local max_per_user, now = tonumber(ARGV[8]), tonumber(ARGV[9])
local sess_prefix, user_prefix, evicted_prefix = ARGV[10], ARGV[11], ARGV[12]

local previous_owner = redis.call('HGET', sess_key, 'userId')
if previous_owner and previous_owner ~= user_id then
  redis.call('ZREM', user_prefix .. previous_owner, id)
end
redis.call('DEL', sess_key)
redis.call('DEL', evicted_prefix .. id)
local d = deadline(ARGV[5], ARGV[6], ARGV[7])
if d <= now then
  redis.call('ZREM', user_key, id)
  return {}
end
redis.call('HSET', sess_key, 'json', ARGV[2], 'userId', user_id, 'lastAccessedAt', ARGV[5],
  'idleTimeoutMs', ARGV[6], 'expiresAt', ARGV[7], 'secretHash', ARGV[13])
redis.call('PEXPIRE', sess_key, ttl(d, now))
redis.call('ZADD', user_key, ARGV[4], id)

local ids, deadlines = live_sessions(user_key, user_id, sess_prefix, now)
local evicted = {}
local excess = #ids - max_per_user
for i = 1, excess do
  local key = sess_prefix .. ids[i]
  -- Sessions stored before the hash sat beside the JSON have none: a cookie of theirs is then not told apart.
  local secret_hash = redis.call('HGET', key, 'secretHash') or ''
  redis.call('DEL', key)
  redis.call('ZREM', user_key, ids[i])
  local eviction_key = evicted_prefix .. ids[i]
  redis.call('HSET', eviction_key, 'userId', user_id, 'secretHash', secret_hash, 'evictedAt', ARGV[9],
    'until', deadlines[i])
  redis.call('PEXPIRE', eviction_key, ttl(deadlines[i], now))
  redis.call('ZADD', evictions_key, deadlines[i], ids[i])
  table.insert(evicted, ids[i])
end
if excess > 0 then
  redis.call('ZREMRANGEBYSCORE', evictions_key, '-inf', now)
  local last = redis.call('ZRANGE', evictions_key, -1, -1, 'WITHSCORES')
  if last[2] then redis.call('PEXPIRE', evictions_key, ttl(tonumber(last[2]), now)) end
end
expire_index(user_key, deadlines, math.max(excess, 0) + 1, now)
return evicted
`;

/** KEYS: session. ARGV: id, now, user index prefix. Returns {json, lastAccessedAt} or nil. */
const GET = `${PRELUDE}
local f = redis.call('HMGET', KEYS[1], 'json', 'userId', 'lastAccessedAt', 'idleTimeoutMs', 'expiresAt')
if not f[1] then return nil end
if deadline(f[3], f[4], f[5]) <= tonumber(ARGV[2]) then
  redis.call('DEL', KEYS[1])
  redis.call('ZREM', ARGV[3] .. f[2], ARGV[1])
  return nil
end
return {f[1], f[3]}
`;

/** KEYS: session. ARGV: id, at, now, user index prefix. */
const TOUCH = `${PRELUDE}
local f = redis.call('HMGET', KEYS[1], 'userId', 'lastAccessedAt', 'idleTimeoutMs', 'expiresAt')
if not f[1] then return 0 end
local now = tonumber(ARGV[3])
local user_key = ARGV[4] .. f[1]
if deadline(f[2], f[3], f[4]) <= now then
  redis.call('DEL', KEYS[1])
  redis.call('ZREM', user_key, ARGV[1])
  return 0
end
local last = f[2]
-- Requests finish out of order; an older use must not shorten the idle window.
if tonumber(ARGV[2]) > tonumber(last) then
  last = ARGV[2]
  redis.call('HSET', KEYS[1], 'lastAccessedAt', last)
end
local remaining = ttl(deadline(last, f[3], f[4]), now)
redis.call('PEXPIRE', KEYS[1], remaining)
local index_ttl = redis.call('PTTL', user_key)
if index_ttl ~= -2 and index_ttl < remaining then redis.call('PEXPIRE', user_key, remaining) end
return 1
`;

/**
 * KEYS: session. ARGV: id, now, user index prefix, owner ('' for any). Returns 1 when a live session was deleted;
 * a session of another user than the owner given is left alone.
 */
const DELETE = `${PRELUDE}
local f = redis.call('HMGET', KEYS[1], 'userId', 'lastAccessedAt', 'idleTimeoutMs', 'expiresAt')
if not f[1] then return 0 end
if ARGV[4] ~= '' and f[1] ~= ARGV[4] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', ARGV[3] .. f[1], ARGV[1])
if deadline(f[2], f[3], f[4]) <= tonumber(ARGV[2]) then return 0 end
return 1
`;

/** KEYS: user index. ARGV: userId, now, session key prefix. Returns json, lastAccessedAt, json, … oldest first. */
const LIST = `${PRELUDE}
local now = tonumber(ARGV[2])
local ids, deadlines = live_sessions(KEYS[1], ARGV[1], ARGV[3], now)
expire_index(KEYS[1], deadlines, 1, now)
local out = {}
for _, id in ipairs(ids) do
  local f = redis.call('HMGET', ARGV[3] .. id, 'json', 'lastAccessedAt')
  table.insert(out, f[1])
  table.insert(out, f[2])
end
return out
`;

/**
 * KEYS: user index, user's evictions. ARGV: userId, now, session key prefix, eviction key prefix. Returns how many
 * live sessions were deleted.
 */
const DELETE_BY_USER = `${PRELUDE}
local ids = live_sessions(KEYS[1], ARGV[1], ARGV[3], tonumber(ARGV[2]))
for _, id in ipairs(ids) do redis.call('DEL', ARGV[3] .. id) end
redis.call('DEL', KEYS[1])
for _, id in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
  local key = ARGV[4] .. id
  if redis.call('HGET', key, 'userId') == ARGV[1] then redis.call('DEL', key) end
end
redis.call('DEL', KEYS[2])
return #ids
`;

/** KEYS: eviction. ARGV: now. Returns {userId, secretHash, evictedAt} or nil. */
const EVICTED = `
local f = redis.call('HMGET', KEYS[1], 'userId', 'secretHash', 'evictedAt', 'until')
if not f[1] then return nil end
if tonumber(f[4]) <= tonumber(ARGV[1]) then
  redis.call('DEL', KEYS[1])
  return nil
end
return {f[1], f[2], f[3]}
`;

type Script = (keys: string[], args: (string | number)[]) => Promise<unknown>;

/** Runs a script by its SHA, sending the body only when the server does not have it cached yet. */
function script(redis: Redis, lua: string): Script {
  const sha = createHash('sha1').update(lua).digest('hex');
  return async (keys, args) => {
    try {
      return await redis.evalsha(sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      return redis.eval(lua, keys.length, ...keys, ...args);
    }
  };
}

function toRecord(json: string, lastAccessedAt: string): SessionRecord {
  return { ...(JSON.parse(json) as SessionRecord), lastAccessedAt: Number(lastAccessedAt) };
}

/**
 * Session store in Redis, shared by every instance, with the evictions it remembers. Keys are `${prefix}sess:<id>`,
 * `${prefix}user-sess:<userId>`, `${prefix}evicted:<id>` and `${prefix}user-evicted:<userId>`; each operation is one
 * atomic Lua script, so concurrent logins of one user cannot leave more than `maxPerUser` sessions. Expiry is judged
 * with `now()` (default Date.now); key TTLs follow the same remaining time so abandoned sessions and evictions
 * disappear on their own.
 */
export function createRedisSessionStore(redis: Redis, options: { prefix: string; now?: () => number }): SessionStore {
  const now = options.now ?? Date.now;
  const sessPrefix = `${options.prefix}sess:`;
  const userPrefix = `${options.prefix}user-sess:`;
  const evictedPrefix = `${options.prefix}evicted:`;
  const userEvictedPrefix = `${options.prefix}user-evicted:`;
  const run = {
    create: script(redis, CREATE),
    get: script(redis, GET),
    touch: script(redis, TOUCH),
    delete: script(redis, DELETE),
    list: script(redis, LIST),
    deleteByUser: script(redis, DELETE_BY_USER),
    evicted: script(redis, EVICTED),
  };

  return {
    async create(record, maxPerUser) {
      if (!Number.isInteger(maxPerUser) || maxPerUser < 1) {
        throw new RangeError(`maxPerUser must be a positive integer, got ${maxPerUser}`);
      }
      const evicted = (await run.create(
        [sessPrefix + record.id, userPrefix + record.userId, userEvictedPrefix + record.userId],
        [
          record.id,
          JSON.stringify(record),
          record.userId,
          record.createdAt,
          record.lastAccessedAt,
          record.idleTimeoutMs,
          record.expiresAt,
          maxPerUser,
          now(),
          sessPrefix,
          userPrefix,
          evictedPrefix,
          record.secretHash,
        ],
      )) as string[];
      return { evicted };
    },

    async get(id) {
      const found = (await run.get([sessPrefix + id], [id, now(), userPrefix])) as [string, string] | null;
      return found === null ? undefined : toRecord(found[0], found[1]);
    },

    async touch(id, at) {
      await run.touch([sessPrefix + id], [id, at, now(), userPrefix]);
    },

    async delete(id, owner) {
      return (await run.delete([sessPrefix + id], [id, now(), userPrefix, owner ?? ''])) === 1;
    },

    async listByUser(userId) {
      const flat = (await run.list([userPrefix + userId], [userId, now(), sessPrefix])) as string[];
      const records: SessionRecord[] = [];
      for (let i = 0; i + 1 < flat.length; i += 2) records.push(toRecord(flat[i]!, flat[i + 1]!));
      return records;
    },

    async deleteByUser(userId) {
      return (await run.deleteByUser(
        [userPrefix + userId, userEvictedPrefix + userId],
        [userId, now(), sessPrefix, evictedPrefix],
      )) as number;
    },

    async evicted(id): Promise<EvictedSession | undefined> {
      const found = (await run.evicted([evictedPrefix + id], [now()])) as [string, string, string] | null;
      return found === null ? undefined : { id, userId: found[0], secretHash: found[1], evictedAt: Number(found[2]) };
    },
  };
}
