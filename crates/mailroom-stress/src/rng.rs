//! A small, fast, seedable random source (xorshift64*), so a run's choices replay from its seed
//! without a dependency.
//!
//! Invariant: the same seed gives the same sequence on every machine; the state is never zero.

/// xorshift64* (Vigna): good enough to pick recipients and delays, not for anything secret.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        // SplitMix64 scrambles the seed so that nearby seeds give unrelated streams.
        let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        Rng(if z == 0 { 1 } else { z })
    }

    /// A stream derived from this seed and some labels (a sender and a sequence number, say).
    pub fn derive(seed: u64, labels: &[u64]) -> Rng {
        let mut s = seed;
        for l in labels {
            s = Rng::new(s ^ l.wrapping_mul(0x2545_f491_4f6c_dd1d)).next_u64();
        }
        Rng::new(s)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// A seed from the clock and the process id, for runs without `--seed`.
    pub fn fresh_seed() -> u64 {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        Rng::new(nanos ^ u64::from(std::process::id())).next_u64()
    }
}
