//! A fast hasher for the writer's prefix map: keys are addresses, not attacker-chosen strings
//! reaching a shared table, so SipHash's flood resistance buys nothing here.

use std::hash::{BuildHasherDefault, Hasher};

#[derive(Default, Clone, Copy)]
pub struct PrefixHasher(u64);

const K: u64 = 0x9e37_79b9_7f4a_7c15;

impl Hasher for PrefixHasher {
    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 29)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u8(&mut self, v: u8) {
        self.write_u64(u64::from(v));
    }
    fn write_u32(&mut self, v: u32) {
        self.write_u64(u64::from(v));
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(K);
    }
    fn write_u128(&mut self, v: u128) {
        self.write_u64(v as u64);
        self.write_u64((v >> 64) as u64);
    }
}

pub type BuildPrefixHasher = BuildHasherDefault<PrefixHasher>;
