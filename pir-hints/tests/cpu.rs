//! The CPU backend and the direct oracle against a second implementation of SPEC.md written
//! here (ChaCha from RustCrypto's `chacha20`, the iPRF from the `prp` tests' own oracle), on
//! small databases of awkward shapes; shards against whole runs; known answers; errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "../../prp/tests/spec/mod.rs"]
mod prp_spec;

use pir_hints::{
    Cpu, Database, HintGenerator, Hints, Job, MasterKey, Params, Scheme, direct_hints,
    synthetic_database,
};

/// Word `i` of the ChaCha8 block as little-endian u32s.
fn block_words(key: &[u8; 32], counter: u64, nonce: [u32; 3]) -> [u32; 16] {
    let bytes = prp_spec::keystream_block(key, counter as u32, nonce);
    std::array::from_fn(|i| u32::from_le_bytes(bytes[4 * i..4 * i + 4].try_into().unwrap()))
}

const SLCT: u32 = 0x534C_4354;
const OFFS: u32 = 0x4F46_4653;
const EXTR: u32 = 0x4558_5452;

/// One hint by the letter of SPEC.md: (valid, parity, second parity for backup hints).
fn spec_hint(
    params: &Params,
    master: &[u8; 32],
    db: &[u8],
    j: u64,
) -> (bool, Vec<u8>, Option<Vec<u8>>) {
    let (n, e, w) = (params.entries(), params.entry_size(), params.block_size());
    let c = n.div_ceil(w).next_multiple_of(2);
    let label = match params.scheme() {
        Scheme::Rms24 => "rms24/prf",
        Scheme::Plinko => "plinko/select",
    };
    let ks = prp_spec::derive(master, label, 0);
    let nonce = |tag| [j as u32, (j >> 32) as u32, tag];
    let v: Vec<u32> = (0..c)
        .map(|a| block_words(&ks, a / 16, nonce(SLCT))[(a % 16) as usize])
        .collect();
    let mut sorted = v.clone();
    sorted.sort();
    let cutoff = sorted[(c / 2) as usize];
    let is_backup = j >= params.main_hints();
    let mut parity = vec![0u8; e];
    let mut second = is_backup.then(|| vec![0u8; e]);
    if sorted[(c / 2 - 1) as usize] == cutoff {
        return (false, parity, second);
    }
    let unselected: Vec<u64> = (0..c).filter(|&a| v[a as usize] >= cutoff).collect();
    let x = block_words(&ks, 0, nonce(EXTR));
    let extra = unselected[((u64::from(x[0]) + (u64::from(x[1]) << 32)) % (c / 2)) as usize];
    let offset = |a: u64| match params.scheme() {
        Scheme::Rms24 => {
            let o = block_words(&ks, a / 8, nonce(OFFS));
            let i = (2 * a % 16) as usize;
            (u64::from(o[i]) + (u64::from(o[i + 1]) << 32)) % w
        }
        Scheme::Plinko => {
            let key = prp_spec::derive(master, "plinko/block", a);
            prp_spec::iprf(&key, params.total_hints(), w.trailing_zeros(), j)
        }
    };
    let xor = |dst: &mut Vec<u8>, a: u64| {
        let index = a * w + offset(a);
        if index < n {
            let entry = &db[(index as usize) * e..(index as usize + 1) * e];
            dst.iter_mut().zip(entry).for_each(|(d, s)| *d ^= s);
        }
    };
    for a in 0..c {
        if v[a as usize] < cutoff || (!is_backup && a == extra) {
            xor(&mut parity, a);
        } else if let Some(second) = second.as_mut() {
            xor(second, a);
        }
    }
    (true, parity, second)
}

/// Generates every hint with the CPU backend and checks `check` of them (all if `None`)
/// against the spec and against `direct_hints`. Returns the hints.
fn check_against_spec(params: Params, master: [u8; 32], seed: u64, check: Option<&[u64]>) -> Hints {
    let bytes = synthetic_database(seed, params.entries(), params.entry_size()).unwrap();
    let db = Database::new(&bytes, params.entry_size()).unwrap();
    let key = MasterKey::new(&master);
    let hints = Cpu.generate(&Job::new(params, &key), &db).unwrap();
    let all: Vec<u64> = (0..params.total_hints()).collect();
    let check = check.unwrap_or(&all);
    let direct = direct_hints(&params, &key, &db, params.all_blocks(), check).unwrap();
    for (&j, d) in check.iter().zip(&direct) {
        let (valid, parity, second) = spec_hint(&params, &master, &bytes, j);
        assert_eq!(hints.is_valid(j), valid, "hint {j}");
        assert_eq!(hints.parity(j), Some(&parity[..]), "hint {j}");
        assert_eq!(hints.second_parity(j), second.as_deref(), "hint {j}");
        assert_eq!(
            (d.valid, &d.parity, &d.second),
            (valid, &parity, &second),
            "hint {j}"
        );
    }
    hints
}

#[test]
fn ties_make_hints_invalid() {
    for (scheme, master, tied, params) in common::ties() {
        let check = [0, tied - 1, tied, tied + 1, 1999];
        let hints = check_against_spec(params, master, 6, Some(&check));
        assert!(!hints.is_valid(tied), "{scheme}");
        assert_eq!(hints.parity(tied), Some(&[0u8; 4][..]));
        assert_eq!(hints.valid_count(), params.total_hints() - 1, "{scheme}");
    }
}

#[test]
fn rms24_equals_the_spec() {
    // n not a multiple of w, c = ceil(1000 / 30) = 34; odd entry size.
    let params = Params::new(Scheme::Rms24, 1000, 7)
        .unwrap()
        .with_block_size(30)
        .unwrap()
        .with_hints(40, 13)
        .unwrap();
    check_against_spec(params, [1; 32], 1, None);
    // ceil(n / w) = 9, rounded up to c = 10: the last block is all padding.
    let params = Params::new(Scheme::Rms24, 81, 4)
        .unwrap()
        .with_block_size(10)
        .unwrap()
        .with_hints(9, 9)
        .unwrap();
    check_against_spec(params, [2; 32], 2, None);
    // The smallest shape: one entry, c = 2.
    let params = Params::new(Scheme::Rms24, 1, 3)
        .unwrap()
        .with_hints(3, 2)
        .unwrap();
    check_against_spec(params, [3; 32], 3, None);
}

#[test]
fn plinko_streaming_equals_the_spec() {
    // c = ceil(300 / 16) = 19, rounded up to 20; m = 24 + 9 hints into 16 bins.
    let params = Params::new(Scheme::Plinko, 300, 5)
        .unwrap()
        .with_block_size(16)
        .unwrap()
        .with_hints(24, 9)
        .unwrap();
    check_against_spec(params, [4; 32], 4, None);
    // Fewer hints than bins: most bins are empty.
    let params = Params::new(Scheme::Plinko, 100, 8)
        .unwrap()
        .with_block_size(32)
        .unwrap()
        .with_hints(5, 3)
        .unwrap();
    check_against_spec(params, [5; 32], 5, None);
}

#[test]
fn shards_combine_into_the_whole() {
    for (scheme, w) in [(Scheme::Rms24, 20), (Scheme::Plinko, 16)] {
        let params = Params::new(scheme, 500, 6)
            .unwrap()
            .with_block_size(w)
            .unwrap()
            .with_hints(60, 20)
            .unwrap();
        let bytes = synthetic_database(9, 500, 6).unwrap();
        let db = Database::new(&bytes, 6).unwrap();
        let key = MasterKey::new(&[9; 32]);
        let job = Job::new(params, &key);
        let whole = Cpu.generate(&job, &db).unwrap();
        let c = params.blocks();
        let shards = [0..3, 3..c - 1, c - 1..c]
            .into_iter()
            .rev()
            .map(|r| {
                Cpu.generate(&job.clone().with_blocks(r).unwrap(), &db)
                    .unwrap()
            })
            .collect();
        assert_eq!(Hints::combine_all(shards).unwrap(), whole, "{scheme}");
        let shard = Cpu
            .generate(&job.clone().with_blocks(2..5).unwrap(), &db)
            .unwrap();
        let direct = direct_hints(&params, &key, &db, 2..5, &[0, 61]).unwrap();
        assert_eq!(shard.parity(0), Some(&direct[0].parity[..]));
        assert_eq!(shard.second_parity(61), direct[1].second.as_deref());
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Known answers: master key bytes 0, 1, ..., 31 and the synthetic database of seed 2024.
#[test]
fn known_answers() {
    let master: [u8; 32] = std::array::from_fn(|i| i as u8);
    let key = MasterKey::new(&master);
    let bytes = synthetic_database(2024, 1000, 16).unwrap();
    assert_eq!(hex(&bytes[..16]), KAT_DB_FIRST_ENTRY);
    let db = Database::new(&bytes, 16).unwrap();
    for (scheme, w, expected) in [
        (Scheme::Rms24, 32, KAT_RMS24),
        (Scheme::Plinko, 32, KAT_PLINKO),
    ] {
        let params = Params::new(scheme, 1000, 16)
            .unwrap()
            .with_block_size(w)
            .unwrap()
            .with_hints(100, 50)
            .unwrap();
        let hints = Cpu.generate(&Job::new(params, &key), &db).unwrap();
        let got = [
            hex(hints.parity(0).unwrap()),
            hex(hints.parity(99).unwrap()),
            hex(hints.parity(149).unwrap()),
            hex(hints.second_parity(149).unwrap()),
        ];
        assert_eq!(got, expected, "{scheme}");
    }
    assert_eq!(hex(&key.fingerprint()), KAT_FINGERPRINT);
}

const KAT_DB_FIRST_ENTRY: &str = "76f60f7439b46441ace14a5bb51d5b05";
const KAT_FINGERPRINT: &str = "f35ec8d62239d82b0b5ed0d5b339515a75e7da2092afbccb6fabe52305479e73";
const KAT_RMS24: [&str; 4] = [
    "2b2fea323b45a5a07fbfdbac59b1cb2f",
    "51d6773c083973242c7a6bffb5b6328c",
    "fe69d86cc5b310c802a9e8151a2a8117",
    "6a494e4b421a258eace68cecbb42ea36",
];
const KAT_PLINKO: [&str; 4] = [
    "94742f7290d985e0ab2be87c296431bf",
    "ca737bbcb00c8730725be34ec2d49505",
    "1b8d852ea6f250356ac3b7949cf46ee9",
    "1ddc13e147df30f4cf0d929fcbce5ce9",
];

#[test]
fn bad_input_is_an_error() {
    let params = Params::new(Scheme::Rms24, 100, 4).unwrap();
    let key = MasterKey::new(&[1; 32]);
    let bytes = vec![0u8; 404];
    let db = Database::new(&bytes, 4).unwrap();
    let err = Cpu.generate(&Job::new(params, &key), &db).unwrap_err();
    assert!(err.to_string().contains("101 entries"), "{err}");
    let bytes = vec![0u8; 400];
    let db = Database::new(&bytes, 4).unwrap();
    assert!(Job::new(params, &key).with_blocks(3..3).is_err());
    assert!(Job::new(params, &key).with_blocks(0..11).is_err());
    assert!(direct_hints(&params, &key, &db, 0..10, &[params.total_hints()]).is_err());
    assert!(direct_hints(&params, &key, &db, 0..11, &[0]).is_err());
}
