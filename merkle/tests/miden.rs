//! Cross-checks against miden-crypto 0.28.1, the reference SPEC.md names for Rpo256, Rpx256 and
//! Poseidon2: constants, permutations, `merge`, `hash_elements`, and trees (miden-crypto's
//! own `MerkleTree`, which hashes with Poseidon2, and its paths).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use merkle::{Cpu, Digest, Felt, Hasher, MODULUS, MerkleTree, Poseidon2, Rpo256, Rpx256};
use miden_crypto::hash::poseidon2::Poseidon2 as MidenPoseidon2;
use miden_crypto::hash::rpo::Rpo256 as MidenRpo256;
use miden_crypto::hash::rpx::Rpx256 as MidenRpx256;
use miden_crypto::merkle::{MerkleTree as MidenTree, NodeIndex};
use miden_crypto::{Felt as MidenFelt, Word};
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn random_felts(rng: &mut StdRng, count: usize) -> Vec<Felt> {
    // Mostly uniform, with the field's edges mixed in.
    (0..count)
        .map(|_| match rng.random_range(0..8) {
            0 => Felt::new(MODULUS - 1),
            1 => Felt::ZERO,
            _ => Felt::new(rng.random()),
        })
        .collect()
}

fn random_digests(rng: &mut StdRng, count: usize) -> Vec<Digest> {
    random_felts(rng, 4 * count)
        .chunks_exact(4)
        .map(|c| Digest::new([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn to_miden(elements: &[Felt]) -> Vec<MidenFelt> {
    elements
        .iter()
        .map(|e| MidenFelt::new(e.as_u64()).unwrap())
        .collect()
}

fn canonical(elements: &[MidenFelt]) -> Vec<u64> {
    elements.iter().map(MidenFelt::as_canonical_u64).collect()
}

fn word(digest: &Digest) -> Word {
    Word::new(to_miden(digest.elements()).try_into().unwrap())
}

fn digest(word: &Word) -> Digest {
    Digest::from_u64s(canonical(word.as_elements()).try_into().unwrap()).unwrap()
}

fn table<const W: usize, const R: usize>(table: &[[MidenFelt; W]; R]) -> Vec<u64> {
    table.iter().flat_map(|row| canonical(row)).collect()
}

#[test]
fn rescue_constants_are_miden_cryptos() {
    assert_eq!(
        merkle::rpo::ARK1.concat(),
        table(&MidenRpo256::ARK1),
        "Rpo256 ARK1"
    );
    assert_eq!(
        merkle::rpo::ARK2.concat(),
        table(&MidenRpo256::ARK2),
        "Rpo256 ARK2"
    );
    assert_eq!(table(&MidenRpx256::ARK1), table(&MidenRpo256::ARK1));
    assert_eq!(table(&MidenRpx256::ARK2), table(&MidenRpo256::ARK2));
    for (row, values) in MidenRpo256::MDS.iter().enumerate() {
        for (col, value) in values.iter().enumerate() {
            let ours = merkle::rescue::MDS_ROW[(col + 12 - row) % 12];
            assert_eq!(ours, value.as_canonical_u64(), "MDS[{row}][{col}]");
        }
    }
    assert_eq!(MidenRpo256::NUM_ROUNDS, merkle::rpo::ROUNDS);
}

#[test]
fn poseidon2_constants_are_miden_cryptos() {
    use merkle::poseidon2::*;
    assert_eq!(
        EXTERNAL_INITIAL.concat(),
        table(&MidenPoseidon2::ARK_EXT_INITIAL)
    );
    assert_eq!(
        EXTERNAL_TERMINAL.concat(),
        table(&MidenPoseidon2::ARK_EXT_TERMINAL)
    );
    assert_eq!(INTERNAL.to_vec(), canonical(&MidenPoseidon2::ARK_INT));
    assert_eq!(
        MATRIX_DIAGONAL.to_vec(),
        canonical(&MidenPoseidon2::MAT_DIAG)
    );
    assert_eq!(
        MidenPoseidon2::NUM_EXTERNAL_ROUNDS_HALF,
        HALF_EXTERNAL_ROUNDS
    );
    assert_eq!(MidenPoseidon2::NUM_INTERNAL_ROUNDS, INTERNAL_ROUNDS);
}

/// Each permutation against miden-crypto's on random states and on all-`p - 1`.
#[test]
fn permutations_match() {
    let mut rng = StdRng::seed_from_u64(1);
    let mut states: Vec<[Felt; 12]> = (0..32)
        .map(|_| random_felts(&mut rng, 12).try_into().unwrap())
        .collect();
    states.push([Felt::new(MODULUS - 1); 12]);
    states.push([Felt::ZERO; 12]);
    type Pair = (fn(&mut [Felt; 12]), fn(&mut [MidenFelt; 12]));
    let pairs: [(&str, Pair); 3] = [
        ("Rpo256", (Rpo256::permute, MidenRpo256::apply_permutation)),
        ("Rpx256", (Rpx256::permute, MidenRpx256::apply_permutation)),
        (
            "Poseidon2",
            (Poseidon2::permute, MidenPoseidon2::apply_permutation),
        ),
    ];
    for (name, (ours, theirs)) in pairs {
        for state in &states {
            let mut a = *state;
            let mut b: [MidenFelt; 12] = to_miden(state).try_into().unwrap();
            ours(&mut a);
            theirs(&mut b);
            let a: Vec<u64> = a.iter().map(|e| e.as_u64()).collect();
            assert_eq!(a, canonical(&b), "{name}");
        }
    }
}

/// `hash_elements` and `merge` of one hasher against miden-crypto's.
fn check_hashes<H: Hasher>(
    hash_elements: fn(&[MidenFelt]) -> Word,
    merge: fn(&[Word; 2]) -> Word,
    seed: u64,
    len: usize,
) -> Result<(), TestCaseError> {
    let mut rng = StdRng::seed_from_u64(seed);
    let elements = random_felts(&mut rng, len);
    prop_assert_eq!(
        H::hash_elements(&elements),
        digest(&hash_elements(&to_miden(&elements))),
        "{} hash_elements of {} elements",
        H::NAME,
        len
    );
    let pair = random_digests(&mut rng, 2);
    prop_assert_eq!(
        H::merge(&pair[0], &pair[1]),
        digest(&merge(&[word(&pair[0]), word(&pair[1])])),
        "{} merge",
        H::NAME
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn rpo256_hashes_match(seed: u64, len in 0usize..40) {
        check_hashes::<Rpo256>(
            MidenRpo256::hash_elements, MidenRpo256::merge, seed, len)?;
    }

    #[test]
    fn rpx256_hashes_match(seed: u64, len in 0usize..40) {
        check_hashes::<Rpx256>(
            MidenRpx256::hash_elements, MidenRpx256::merge, seed, len)?;
    }

    #[test]
    fn poseidon2_hashes_match(seed: u64, len in 0usize..40) {
        check_hashes::<Poseidon2>(
            MidenPoseidon2::hash_elements, MidenPoseidon2::merge, seed, len)?;
    }
}

/// Poseidon2 trees against miden-crypto's `MerkleTree`: every root, and the paths of a few
/// leaves, for 2 to 2^10 leaves.
#[test]
fn poseidon2_trees_are_miden_merkle_trees() {
    let mut rng = StdRng::seed_from_u64(2);
    for depth in 1..=10u8 {
        let leaves = random_digests(&mut rng, 1 << depth);
        let ours = MerkleTree::build_with(Poseidon2, &Cpu, &leaves).unwrap();
        let theirs = MidenTree::new(leaves.iter().map(word).collect::<Vec<_>>()).unwrap();
        assert_eq!(*ours.root(), digest(&theirs.root()), "depth {depth}");
        for _ in 0..4 {
            let index = rng.random_range(0..1usize << depth);
            let path = theirs
                .get_path(NodeIndex::new(depth, index as u64).unwrap())
                .unwrap();
            let theirs: Vec<Digest> = path.iter().map(digest).collect();
            assert_eq!(
                ours.prove(index).unwrap(),
                theirs,
                "depth {depth}, leaf {index}"
            );
        }
    }
}

/// Rpo256 and Rpx256 trees: every node is miden-crypto's merge of its children.
#[test]
fn rescue_trees_use_miden_cryptos_merge() {
    let mut rng = StdRng::seed_from_u64(3);
    for depth in [1u32, 2, 5] {
        let leaves = random_digests(&mut rng, 1 << depth);
        let rpo = MerkleTree::build_with(Rpo256, &Cpu, &leaves).unwrap();
        let rpx = MerkleTree::build_with(Rpx256, &Cpu, &leaves).unwrap();
        for node in 1..1usize << depth {
            let children = |tree: &[Digest]| [word(&tree[2 * node]), word(&tree[2 * node + 1])];
            let expected = digest(&MidenRpo256::merge(&children(rpo.nodes())));
            assert_eq!(rpo.nodes()[node], expected);
            let expected = digest(&MidenRpx256::merge(&children(rpx.nodes())));
            assert_eq!(rpx.nodes()[node], expected);
        }
    }
}

/// Fixed vectors, computed with miden-crypto 0.28.1 and written here: each is checked against
/// both our hash and miden-crypto's, so a change in either shows (a new miden-crypto release
/// that changed its sponge again, as 0.21.0 did, would fail here).
#[test]
fn known_answers() {
    let counting: Vec<Felt> = (0..8u32).map(Felt::from).collect();
    let minus_one = vec![Felt::new(MODULUS - 1); 11];
    type Case = (
        fn(&[Felt]) -> Digest,
        fn(&[MidenFelt]) -> Word,
        [&'static str; 2],
    );
    let cases: [(&str, Case); 3] = [
        (
            "Rpo256",
            (
                Rpo256::hash_elements,
                MidenRpo256::hash_elements,
                [KAT_RPO256_COUNTING_8, KAT_RPO256_MINUS_ONE_11],
            ),
        ),
        (
            "Rpx256",
            (
                Rpx256::hash_elements,
                MidenRpx256::hash_elements,
                [KAT_RPX256_COUNTING_8, KAT_RPX256_MINUS_ONE_11],
            ),
        ),
        (
            "Poseidon2",
            (
                Poseidon2::hash_elements,
                MidenPoseidon2::hash_elements,
                [KAT_POSEIDON2_COUNTING_8, KAT_POSEIDON2_MINUS_ONE_11],
            ),
        ),
    ];
    for (name, (ours, theirs, expected)) in cases {
        for (elements, expected) in [&counting, &minus_one].into_iter().zip(expected) {
            assert_eq!(ours(elements).to_string(), expected, "{name}");
            assert_eq!(digest(&theirs(&to_miden(elements))).to_string(), expected);
        }
    }
    let leaves: Vec<Digest> = (0..8u32)
        .map(|i| Poseidon2::hash_elements(&[Felt::from(i)]))
        .collect();
    let tree = MerkleTree::build_with(Poseidon2, &Cpu, &leaves).unwrap();
    assert_eq!(tree.root().to_string(), KAT_POSEIDON2_ROOT_8);
    let theirs = MidenTree::new(leaves.iter().map(word).collect::<Vec<_>>()).unwrap();
    assert_eq!(digest(&theirs.root()).to_string(), KAT_POSEIDON2_ROOT_8);
}

const KAT_RPO256_COUNTING_8: &str =
    "2d15fa1522183c4b10e47645ff7626875396dba8794a6461818f21a9d0ddd877";
const KAT_RPO256_MINUS_ONE_11: &str =
    "94bc42d630244c56c257a19a885cdc0af4a301d50b96eb01bcec746f4b0f4c02";
const KAT_RPX256_COUNTING_8: &str =
    "fba9851ea40a2490b55a5be697b9299676234f8b58fa414f02ec02c8be5d4e99";
const KAT_RPX256_MINUS_ONE_11: &str =
    "db1ef628d826715dd2b8f8f4b937b58729d12e016707b94f25941f25d5e44059";
const KAT_POSEIDON2_COUNTING_8: &str =
    "1f85f52c5851b7c7d12cf9070f228bedd3a32b0922a014e25692a8395772f5f2";
const KAT_POSEIDON2_MINUS_ONE_11: &str =
    "6ebb935f29fe115646ba6bfad144c483ff18d0c627f731e7f65588af4474a271";
/// The root of miden-crypto's `MerkleTree` over `Poseidon2::hash_elements([i])`, i = 0..8.
const KAT_POSEIDON2_ROOT_8: &str =
    "60bea11ceda8175b2bd7046163a6ab6e971e0ec311e08c6cbd5e9474ed043cfb";
