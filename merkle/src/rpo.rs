//! Rpo256 (Rescue Prime Optimized), bit-compatible with miden-crypto 0.28.1
//! (`miden_crypto::hash::rpo::Rpo256`).
//!
//! Seven rounds on a 12-element state, each `MDS, + ARK1[r], x^7, MDS, + ARK2[r], x^(1/7)`:
//! the S-box, inverse S-box and circulant MDS matrix of Rp64_256 ([`crate::rescue`]) with
//! other round constants and the MDS step first. The constants are the published instance's;
//! `tests/miden.rs` checks them against miden-crypto's tables.
//!
//! The sponge, shared with [`Rpx256`](crate::Rpx256) and [`Poseidon2`](crate::Poseidon2), is
//! miden-crypto's since 0.21.0: the rate in `s[0..8]`, the capacity in `s[8..12]`, the digest
//! in `s[0..4]` (older releases put the capacity first and give other digests). `merge(L, R)`
//! permutes `[L, R, 0, 0, 0, 0]`; `hash_elements` sets `s[8] = len mod 8`, writes (not adds)
//! each chunk of eight elements into the rate, zero-fills a final partial chunk, and permutes
//! after each chunk; no elements give the zero digest.

use crate::digest::Digest;
use crate::field::Felt;
use crate::hasher::{Hasher, sealed};
use crate::rescue::{mds_add, pow_inv_alpha};
use crate::sponge::{self, Permutation, STATE_WIDTH, State};

/// Rounds per permutation.
pub const ROUNDS: usize = 7;

/// Round constants added in the first half of each round (canonical values).
pub const ARK1: [[u64; STATE_WIDTH]; ROUNDS] = [
    [
        0x50595e2460423080,
        0x5a84ce185f5bae97,
        0xf72973c23aa6f9cb,
        0x017ca8081f617c3c,
        0x58aa35ade9424046,
        0xdbe16fa8b27faecb,
        0x8a6e521e04cc3f3f,
        0x2e6bc5568c881614,
        0x8a3626330baa9677,
        0xb3ddeaccfbf5a691,
        0x854467ace60e8a1b,
        0xe72b7a87bed131f4,
    ],
    [
        0xb43bc4a4deb5d7a5,
        0x09135300915c4f81,
        0x3da3ed63dae7f669,
        0x380a98acc7db7371,
        0x4de7085b5365a926,
        0xb7817f191d432dd5,
        0x2a284bb7bfcb3755,
        0xe7889f13dd9bea2b,
        0x73b444df687fed0b,
        0x2cca04f182db3a00,
        0x708e51f9a1893e3a,
        0x27dbabfddab59589,
    ],
    [
        0xfacf6ea8cd7f5ebf,
        0x560e4919ef81a7e9,
        0xf563693084500b1b,
        0x9319157e04fa6d58,
        0x0d87e8db62da4d1a,
        0x72b07b7d0a3060d1,
        0x8bb0c6efce682ae2,
        0x1e44efc3f951c7b5,
        0x57ab9282afc28a97,
        0x1372eb1bd827429c,
        0x7b4bf8c76437d9b6,
        0xb556f49d65b5affc,
    ],
    [
        0x4ec08822d1649af2,
        0x4fec612ae8a20297,
        0xc1807db3d406eec9,
        0x12c5edbb56d825e2,
        0xed762ceb74d62145,
        0x0dee82fe5a880aa6,
        0x397ae162d2d827b3,
        0x70b50c4015e67d10,
        0xc675a5e7967161e9,
        0xbe4b9df1676fdba5,
        0xec39c51147ca6f4b,
        0x56c3e89e2d94dc42,
    ],
    [
        0x43d4474017eef67a,
        0x2a02792df9c4708c,
        0x8528a35711d49dd3,
        0x921cfe7a0d5480ef,
        0x6d24fd145d1acea7,
        0xf3544cec7c8fb490,
        0x503c812a00ba9267,
        0xec41ad6d8ae8801e,
        0x018596a32ae63fc7,
        0x6359a43c0ec3956d,
        0x29028ad62f22f702,
        0x6729e445d0ce55d9,
    ],
    [
        0xe254ba7b438cb541,
        0xa6378971bfbfb3da,
        0xadeb7834c155923f,
        0xca8b77f99f834e42,
        0x65319f21e97797b8,
        0x4c88374b5dd3159d,
        0x8b228fd24a337113,
        0x6538c386d1e55bfd,
        0x5d609f3f4a01143c,
        0x57e126a4f4cf409e,
        0xb843cef8c2faf7e4,
        0x2417d2a27b45b944,
    ],
    [
        0x62da3f9791d3ab16,
        0x0e5a3c7794118cf2,
        0x6b1b386ae880f795,
        0x29e5e505b3f5a91a,
        0x9e426915297df504,
        0x8eabf5c551ce1736,
        0x04adcf0ec4e3f6e2,
        0xb909bf5acd54f805,
        0x31e81abbef89ddf8,
        0x7077eea8de2e5d38,
        0xc713e6261be1babd,
        0xec6ea1039669e548,
    ],
];

/// Round constants added in the second half of each round (canonical values).
pub const ARK2: [[u64; STATE_WIDTH]; ROUNDS] = [
    [
        0x545610627c0e253f,
        0xd4050299cc1d7937,
        0x4a5e0feefb8988e1,
        0xc586c83181332146,
        0xbf691615416d26e5,
        0xa1301a4712135881,
        0xce60a1a2007bbdae,
        0x8cd5c7eb4e3b7a2b,
        0x3ddbf8040326e3f7,
        0xd85d99ae231fd27b,
        0x8ba8176a640fa5c7,
        0xc510d0790d441656,
    ],
    [
        0x56154cc23dc0375c,
        0xf58000ef967c75f3,
        0x31e402e2b72c1deb,
        0x0530b354a02cccb7,
        0x112635e298261f0d,
        0xc4afbfd141f5b352,
        0x09d1cdfd29d87590,
        0xd674db73e2d291ff,
        0x030cced019223fa2,
        0xf816c89cb0be2bd0,
        0xf6135fec50264fd2,
        0x2834b20efce752b8,
    ],
    [
        0x6f58c0a8643b651f,
        0xd05b57d23a80df96,
        0x3e3fb28855baeb0d,
        0xad5476203073cf51,
        0x83d8634a982015b0,
        0x1c8147561adbf416,
        0xac5f3488c1ee4e2a,
        0x04f0bbddf9fd028b,
        0x7de3771f68feaf14,
        0xb12aa71a8096d2d8,
        0x7d89c6216fe08363,
        0xb38055125e76c95a,
    ],
    [
        0xff33b8d66ff1c2c4,
        0xe8331207b185b3eb,
        0x3d9ecb3a80a135f0,
        0xeed0b078f2cf1cea,
        0x7948eceebc83b020,
        0xebeee2b7c12ec72f,
        0xbbcfe0c636955337,
        0x074a9b1b5c662c37,
        0xebbfdf02e9518234,
        0x4bddff91d264912e,
        0xc967b70be3bff877,
        0x984b52de2f0ea2ae,
    ],
    [
        0x60e616ffff6d6221,
        0xc3326eb1c066f68b,
        0xe450b29006e2a864,
        0x631350b987e27ae7,
        0x7d11141c0755e6d7,
        0xcae34d92dc29f5c1,
        0x135b5f370979e6d3,
        0x4053390604d15b1f,
        0xe1100aa2bedbac65,
        0x95a16c738e50183b,
        0x5efb96ea7a0b1962,
        0x67573c0c226bf3d7,
    ],
    [
        0x33dbc0d5d6954218,
        0x0804f1885d65a6ed,
        0x5cd7a60a805f62dd,
        0xc0b53529a6f84a34,
        0xc743a850c9c43478,
        0x6b78b89a3847d5f4,
        0xdfeb4958cce467db,
        0xaa920eb91c6b33a1,
        0xa75d6b947c97c6ec,
        0xe45f85a25b0b6767,
        0x3f712dd18a72ba74,
        0xeeb4117df819ac88,
    ],
    [
        0xedbb66463142ccad,
        0x0736a3c13b07ede4,
        0x85943c1b27adeb26,
        0x171ae3690f17f576,
        0x69e1b3086dbd2562,
        0x305e0ef39ce86971,
        0x8763e3e68d1c072e,
        0xd331b9277f5cd123,
        0xe46fd0ddb6c1d138,
        0x85d641ecb35beee3,
        0x321e1684863d6bc3,
        0xfd5bb0830a60d1dc,
    ],
];

/// [`ARK1`] in Montgomery form, for the GPU kernels.
#[cfg(feature = "cuda")]
pub(crate) const ARK1_MONT: [State; ROUNDS] = crate::rescue::to_mont_table(&ARK1);
/// [`ARK2`] in Montgomery form, for the GPU kernels.
#[cfg(feature = "cuda")]
pub(crate) const ARK2_MONT: [State; ROUNDS] = crate::rescue::to_mont_table(&ARK2);

/// Rpo256, the hash of miden-crypto's `Rpo256`, as a [`Hasher`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Rpo256;

impl Rpo256 {
    /// Applies the permutation to `state` (canonical in, canonical out).
    pub fn permute(state: &mut [Felt; STATE_WIDTH]) {
        sponge::permute_canonical::<Self>(state);
    }
}

/// One round: `MDS, + ARK1[r], x^7, MDS, + ARK2[r], x^(1/7)`.
#[inline(always)]
pub(crate) fn round(state: &mut State, r: usize) {
    mds_add(state, &ARK1[r]);
    sponge::sbox(state);
    mds_add(state, &ARK2[r]);
    pow_inv_alpha(state);
}

impl Permutation for Rpo256 {
    fn permute(state: &mut State) {
        for r in 0..ROUNDS {
            round(state, r);
        }
    }
}

impl Hasher for Rpo256 {
    const NAME: &'static str = "Rpo256";

    fn merge(left: &Digest, right: &Digest) -> Digest {
        sponge::merge::<Self>(left, right)
    }

    fn hash_elements(elements: &[Felt]) -> Digest {
        sponge::hash_elements::<Self>(elements)
    }
}

impl sealed::Sealed for Rpo256 {
    #[cfg(feature = "cuda")]
    const DEVICE: crate::cuda::DeviceHasher = crate::cuda::RPO256;
}
