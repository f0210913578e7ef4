//! A link's VNI, taken by transactions so that two links never share one: the VNI's key
//! `/pearl/vni/N` is created only if absent, then the link's `/pearl/links/NET/A|B` only if
//! absent. Both ends of a link may ask at once: each starts at the same number (a hash of the
//! link), so the second finds the first's claim naming the same link and takes it.

use super::keys;
use super::store::{Store, StoreError};

/// VNIs handed out: 4,096 up (below are left to hand-written tunnels), under 2^24.
const FIRST: u32 = 4096;
const SPAN: u32 = (1 << 24) - FIRST;

/// The VNI of link `link` of net `net`, allocated if it has none.
pub fn vni_of(store: &dyn Store, net: &str, link: &str) -> Result<u32, StoreError> {
    let key = keys::link(net, link);
    if let Some(v) = held(store, &key)? {
        return Ok(v);
    }
    let me = format!("{net}/{link}");
    let mut n = FIRST + hash(&me) % SPAN;
    for _ in 0..64 {
        let claimed = store.create(&keys::vni(n), &me, None)?
            || store.range(&keys::vni(n))?.kvs.iter().any(|kv| kv.key == keys::vni(n) && kv.value == me);
        if claimed {
            if store.create(&key, &n.to_string(), None)? {
                return Ok(n);
            }
            // The other end got there with another number: its is the link's.
            let theirs = held(store, &key)?.unwrap_or(n);
            if theirs != n {
                store.delete(&keys::vni(n), false)?;
            }
            return Ok(theirs);
        }
        n = FIRST + (n - FIRST + 1) % SPAN;
    }
    Err(StoreError::Refused(format!("no free VNI found for link {link} of net {net}")))
}

fn held(store: &dyn Store, key: &str) -> Result<Option<u32>, StoreError> {
    Ok(store.range(key)?.kvs.iter().find(|kv| kv.key == key).and_then(|kv| kv.value.parse().ok()))
}

/// Every VNI key and link key of net `net` removed (the net is destroyed).
pub fn release(store: &dyn Store, net: &str) -> Result<(), StoreError> {
    let mine = format!("{net}/");
    for kv in store.range(keys::VNI)?.kvs {
        if kv.value.starts_with(&mine) {
            store.delete(&kv.key, false)?;
        }
    }
    store.delete(&format!("{}{net}/", keys::LINKS), true)
}

fn hash(s: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in s.bytes() {
        h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::super::memory::Memory;
    use super::*;

    #[test]
    fn both_ends_get_one_vni_and_two_links_never_share_one() {
        let store = Memory::default();
        let a = vni_of(&store, "lab", "r1/eth1|r2/eth0").unwrap();
        assert_eq!(vni_of(&store, "lab", "r1/eth1|r2/eth0").unwrap(), a, "the other end asks: the same VNI");
        // A link whose hash lands on a taken VNI moves on.
        store.create(&keys::vni(FIRST + hash("lab/x|y") % SPAN), "other/z", None).unwrap();
        let b = vni_of(&store, "lab", "x|y").unwrap();
        assert_ne!(b, FIRST + hash("lab/x|y") % SPAN);
        assert!((FIRST..1 << 24).contains(&b));
        release(&store, "lab").unwrap();
        assert_eq!(store.range("/pearl/").unwrap().kvs.len(), 1, "only the other net's VNI is left");
    }
}
