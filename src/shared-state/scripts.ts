/**
 * What the fleet keeps in Redis, and the scripts that change it, each one
 * atomic (EVALSHA). Every key of a deployment carries its id as a hash tag,
 * `switchyard:{<id>}:…`, so all of one deployment's keys live in one slot of
 * a Redis Cluster and a script touches one slot; the fleet's own keys are
 * tagged `{switchyard}`.
 *
 * The window (a hash per deployment): fields `r<bucket>` and `t<bucket>`
 * hold the calls and tokens granted in each bucket (the fleet's clock, Redis'
 * own as REGISTER reads it, / (window / B): pods whose clocks disagree still
 * name the same instant alike),
 * `gc` the oldest bucket not yet forgotten. A draw sums the last B + 1
 * buckets and grants what is left of the limit, up to what was asked, in
 * the current bucket; a give-back takes an amount off the bucket it names
 * (which may go below 0: a refund lands in the bucket its call was admitted
 * in, later than the draw that counted it; src/shared-state/budget.ts).
 */

/** Buckets per window: as protocol/deployment-limits.ts (one second of the minute). */
export const WINDOW_BUCKETS = 60;

export const windowKey = (deployment: string): string => `switchyard:{${deployment}}:window`;
/** Cooldowns and provider back-offs, one hash for the fleet: field <id> = "<cooldown until>:<back-off until>:<status>". */
export const COOLDOWNS_KEY = 'switchyard:{switchyard}:cooldowns';
/** The pods: a sorted set, member a pod's id, score when it was last seen (ms). */
export const PODS_KEY = 'switchyard:{switchyard}:pods';

/**
 * DRAW. KEYS[1] the window. ARGV: bucket, B, wanted calls, wanted tokens, rpm (0: none), tpm (0: none),
 * bucket width (ms), now (ms). Returns {granted calls, granted tokens, ms until the oldest counted
 * bucket leaves the window when less was granted than asked (0 otherwise)}.
 */
export const DRAW = `
local key = KEYS[1]
local b = tonumber(ARGV[1])
local B = tonumber(ARGV[2])
local wr = tonumber(ARGV[3])
local wt = tonumber(ARGV[4])
local lr = tonumber(ARGV[5])
local lt = tonumber(ARGV[6])
local width = tonumber(ARGV[7])
local now = tonumber(ARGV[8])
local fields = {}
for i = b - B, b do
  fields[#fields + 1] = 'r' .. i
  fields[#fields + 1] = 't' .. i
end
local vals = redis.call('HMGET', key, unpack(fields))
local sr, st = 0, 0
for j = 0, B do
  sr = sr + (tonumber(vals[2 * j + 1]) or 0)
  st = st + (tonumber(vals[2 * j + 2]) or 0)
end
local gr, gt = 0, 0
if lr > 0 then gr = math.max(0, math.min(wr, lr - sr)) end
if lt > 0 then gt = math.max(0, math.min(wt, lt - st)) end
if gr > 0 then redis.call('HINCRBY', key, 'r' .. b, gr) end
if gt > 0 then redis.call('HINCRBY', key, 't' .. b, gt) end
local wait = 0
if (lr > 0 and gr < wr) or (lt > 0 and gt < wt) then
  for j = 0, B do
    if (tonumber(vals[2 * j + 1]) or 0) > 0 or (tonumber(vals[2 * j + 2]) or 0) > 0 then
      wait = (b + j + 1) * width - now
      break
    end
  end
  if wait <= 0 then wait = width end
end
local gc = tonumber(redis.call('HGET', key, 'gc') or (b - B))
if b - B - gc > B + 1 then
  for _, f in ipairs(redis.call('HKEYS', key)) do
    local n = tonumber(string.sub(f, 2))
    if n and n < b - B then redis.call('HDEL', key, f) end
  end
else
  for i = gc, b - B - 1 do redis.call('HDEL', key, 'r' .. i, 't' .. i) end
end
redis.call('HSET', key, 'gc', b - B)
redis.call('PEXPIRE', key, math.floor(width * (B + 1) * 2))
return {gr, gt, math.floor(wait)}
`;

/**
 * ADD. KEYS[1] the window. ARGV: the current bucket, B, then triples of bucket, calls, tokens (signed),
 * each added to its bucket. Gives back (negative: a lot that expired, what calls did not use) and
 * seeds (positive: what a pod sent on its own while Redis was lost, added when Redis comes back).
 * A bucket that left the window counts nowhere any more: it is skipped.
 */
export const ADD = `
local now = tonumber(ARGV[1])
local B = tonumber(ARGV[2])
for k = 3, #ARGV, 3 do
  local b = tonumber(ARGV[k])
  if b >= now - B then
    local r = tonumber(ARGV[k + 1])
    local t = tonumber(ARGV[k + 2])
    if r ~= 0 then redis.call('HINCRBY', KEYS[1], 'r' .. b, r) end
    if t ~= 0 then redis.call('HINCRBY', KEYS[1], 't' .. b, t) end
  end
end
return 1
`;

/**
 * REGISTER. KEYS[1] the pods. ARGV: this pod's id, how long a pod counts unseen (ms). Marks this
 * pod seen, forgets the pods not seen for that long, both by Redis' own clock, and returns how
 * many are left with that clock's reading ({pods, seconds, microseconds}, as TIME gives it): the
 * fleet's clock, by which every pod names its buckets. Sent as the health ping: its round trip is
 * what the pings time. (TIME before a write needs effects replication: Redis 5 and later.)
 */
export const REGISTER = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]))
return {redis.call('ZCARD', KEYS[1]), t[1], t[2]}
`;

/**
 * COOL. KEYS[1] the cooldowns hash. ARGV: deployment id, cooldown until, back-off until, status, now.
 * Keeps the later of each end (a pod that saw a shorter cooldown never shortens another's), drops
 * what has ended. Returns the field's value after.
 */
export const COOL = `
local old = redis.call('HGET', KEYS[1], ARGV[1])
local c, bo, st = 0, 0, 0
if old then
  local a, b2, s = string.match(old, '^(%d+):(%d+):(%d+)$')
  c, bo, st = tonumber(a) or 0, tonumber(b2) or 0, tonumber(s) or 0
end
local now = tonumber(ARGV[5])
local nc, nb = tonumber(ARGV[2]), tonumber(ARGV[3])
if nc > c then c = nc end
if nb > bo then bo = nb; st = tonumber(ARGV[4]) end
if c <= now and bo <= now then
  redis.call('HDEL', KEYS[1], ARGV[1])
  return false
end
local v = string.format('%d:%d:%d', c, bo, st)
redis.call('HSET', KEYS[1], ARGV[1], v)
redis.call('PEXPIRE', KEYS[1], 600000)
return v
`;
