//! Redis Cluster hash slots: which slot a key is in (CRC16 of its hash tag, or of the whole key
//! when it has none) and which master holds a slot (from `CLUSTER SLOTS`).

use redis::Value;

/// The number of hash slots of a Redis Cluster.
const SLOTS: u16 = 16384;

/// CRC16/XMODEM (polynomial 0x1021, initial 0), the checksum Redis Cluster hashes keys with.
fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &byte in bytes {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 { (crc << 1) ^ 0x1021 } else { crc << 1 };
        }
    }
    crc
}

/// The part of `key` Redis hashes: the text between the first `{` and the first `}` after it
/// when that is not empty (the hash tag), else the whole key.
pub(crate) fn hashed(key: &[u8]) -> &[u8] {
    if let Some(open) = key.iter().position(|&b| b == b'{')
        && let Some(len) = key[open + 1..].iter().position(|&b| b == b'}')
        && len > 0
    {
        return &key[open + 1..open + 1 + len];
    }
    key
}

/// The hash slot of `key`.
pub(crate) fn of(key: &[u8]) -> u16 {
    crc16(hashed(key)) % SLOTS
}

/// The master that holds `slot` in a `CLUSTER SLOTS` reply: `(host, port)`. Each entry of the
/// reply is `[first slot, last slot, [host, port, id, …] of the master, replicas…]`.
pub(crate) fn owner(reply: &Value, slot: u16) -> Option<(String, u16)> {
    let Value::Array(ranges) = reply else { return None };
    ranges.iter().find_map(|range| {
        let Value::Array(range) = range else { return None };
        let first: i64 = redis::from_redis_value(range.first()?).ok()?;
        let last: i64 = redis::from_redis_value(range.get(1)?).ok()?;
        if !(first..=last).contains(&i64::from(slot)) {
            return None;
        }
        let Value::Array(master) = range.get(2)? else { return None };
        let host: String = redis::from_redis_value(master.first()?).ok()?;
        let port: u16 = redis::from_redis_value(master.get(1)?).ok()?;
        Some((host, port))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_those_of_redis_cluster() {
        // The check value of CRC16/XMODEM, and slots Redis's own docs and `CLUSTER KEYSLOT` give.
        assert_eq!(crc16(b"123456789"), 0x31C3);
        assert_eq!(of(b"foo"), 12182);
        assert_eq!(of(b"bar"), 5061);
        assert_eq!(of(b"{user1000}.following"), of(b"{user1000}.followers"));
        assert_eq!(of(b"{user1000}.following"), of(b"user1000"));
        // An empty tag is no tag: the whole key is hashed.
        assert_eq!(hashed(b"foo{}{bar}"), b"foo{}{bar}");
        assert_eq!(hashed(b"foo{{bar}}zap"), b"{bar");
        assert_eq!(hashed(b"r4c:{circuit_breaker:prices}:probes"), b"circuit_breaker:prices");
    }

    #[test]
    fn the_owner_of_a_slot_is_read_from_cluster_slots() {
        let node = |port: i64| {
            Value::Array(vec![
                Value::BulkString(b"127.0.0.1".to_vec()),
                Value::Int(port),
                Value::BulkString(b"id".to_vec()),
                Value::Array(vec![]),
            ])
        };
        let reply = Value::Array(vec![
            Value::Array(vec![Value::Int(0), Value::Int(5460), node(7000)]),
            Value::Array(vec![Value::Int(5461), Value::Int(10922), node(7001), node(7004)]),
        ]);
        assert_eq!(owner(&reply, 0), Some(("127.0.0.1".into(), 7000)));
        assert_eq!(owner(&reply, 10922), Some(("127.0.0.1".into(), 7001)));
        assert_eq!(owner(&reply, 10923), None);
        assert_eq!(owner(&Value::Nil, 1), None);
    }
}
