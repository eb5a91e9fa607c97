//! Known answers and cross-checks against winter-crypto 0.13.1, the reference the spec names.
#![cfg(feature = "winter")]

use merkle::winter::{GpuMerkleTree, WinterDigest};
use merkle::{BatchProof, Cpu, Digest, Error, Felt, MODULUS, MerkleTree, rescue};
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use winter_crypto::hashers::Rp64_256;
use winter_crypto::{ElementHasher, Hasher, VectorCommitment};
use winter_math::fields::f64::BaseElement;

type WinterTree = winter_crypto::MerkleTree<Rp64_256>;

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

fn to_base(elements: &[Felt]) -> Vec<BaseElement> {
    elements.iter().map(|&e| BaseElement::from(e)).collect()
}

fn to_winter(digests: &[Digest]) -> Vec<WinterDigest> {
    digests.iter().map(|d| d.to_winter()).collect()
}

#[test]
fn constants_are_winter_cryptos() {
    for r in 0..rescue::ROUNDS {
        for c in 0..rescue::STATE_WIDTH {
            assert_eq!(rescue::ARK1[r][c], Rp64_256::ARK1[r][c].as_int());
            assert_eq!(rescue::ARK2[r][c], Rp64_256::ARK2[r][c].as_int());
            assert_eq!(
                rescue::MDS_ROW[(c + 12 - r % 12) % 12],
                Rp64_256::MDS[r % 12][c].as_int()
            );
        }
    }
    for (row, mds_row) in Rp64_256::MDS.iter().enumerate() {
        for (col, value) in mds_row.iter().enumerate() {
            assert_eq!(rescue::MDS_ROW[(col + 12 - row) % 12], value.as_int());
        }
    }
    assert_eq!(rescue::INV_ALPHA, 10540996611094048183);
}

/// Fixed vectors, computed once with winter-crypto 0.13.1 and written here.
#[test]
fn known_answers() {
    let counting: Vec<Felt> = (0..8u32).map(Felt::from).collect();
    let cases: [(&[Felt], &str); 3] = [
        (&[], KAT_EMPTY),
        (&counting, KAT_COUNTING_8),
        (&[Felt::new(MODULUS - 1); 11], KAT_MINUS_ONE_11),
    ];
    for (elements, expected) in cases {
        assert_eq!(rescue::hash_elements(elements).to_string(), expected);
    }
    let leaves: Vec<Digest> = (0..8u32)
        .map(|i| rescue::hash_elements(&[Felt::from(i)]))
        .collect();
    let tree = MerkleTree::build(&Cpu, &leaves).unwrap();
    assert_eq!(tree.root().to_string(), KAT_ROOT_8);
}

/// Nothing absorbed, no permutation: the zero digest (winter-crypto's behaviour).
const KAT_EMPTY: &str = "0000000000000000000000000000000000000000000000000000000000000000";
const KAT_COUNTING_8: &str = "cc3166340c834f2523998537728b93581fb000eb627216887aa929f78e6830d7";
const KAT_MINUS_ONE_11: &str = "72aa5eeb4bbddac322a5c6800c41c4fbddfa921b7c8bec3288c8666aae31eee9";
const KAT_ROOT_8: &str = "2eb990cf3af75a36f1fd9b911986f4a63fa25ac7cfdf532e73688d35c6513c92";

#[test]
fn permutation_matches() {
    let mut rng = StdRng::seed_from_u64(1);
    for _ in 0..64 {
        let felts = random_felts(&mut rng, 12);
        let mut ours: [Felt; 12] = felts.clone().try_into().unwrap();
        let mut theirs: [BaseElement; 12] = to_base(&felts).try_into().unwrap();
        rescue::permute(&mut ours);
        Rp64_256::apply_permutation(&mut theirs);
        assert_eq!(to_base(&ours), theirs);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn hash_elements_matches(seed: u64, len in 0usize..70) {
        let elements = random_felts(&mut StdRng::seed_from_u64(seed), len);
        let theirs = Rp64_256::hash_elements(&to_base(&elements));
        prop_assert_eq!(rescue::hash_elements(&elements).to_winter(), theirs);
    }

    #[test]
    fn merge_matches(seed: u64) {
        let pair = random_digests(&mut StdRng::seed_from_u64(seed), 2);
        let theirs = Rp64_256::merge(&[pair[0].to_winter(), pair[1].to_winter()]);
        prop_assert_eq!(rescue::merge(&pair[0], &pair[1]).to_winter(), theirs);
    }
}

#[test]
fn trees_and_proofs_match_for_every_size_up_to_2_pow_12() {
    let mut rng = StdRng::seed_from_u64(2);
    for depth in 1..=12u32 {
        let leaves = random_digests(&mut rng, 1 << depth);
        let ours = MerkleTree::build(&Cpu, &leaves).unwrap();
        let winter_leaves = to_winter(&leaves);
        let nodes = winter_crypto::build_merkle_nodes::<Rp64_256>(&winter_leaves);
        assert_eq!(to_winter(&ours.nodes()[1..1 << depth]), nodes[1..]);
        let theirs = WinterTree::new(winter_leaves).unwrap();
        assert_eq!(ours.root().to_winter(), *theirs.root());
        assert_eq!(ours.depth() as usize, theirs.depth());

        for _ in 0..4 {
            let index = rng.random_range(0..leaves.len());
            let path = ours.prove(index).unwrap();
            assert_eq!(to_winter(&path), theirs.prove(index).unwrap().1);
            MerkleTree::verify(ours.root(), index, &leaves[index], &path).unwrap();
        }

        let count = rng.random_range(1..=leaves.len().min(40));
        let mut indexes: Vec<usize> = (0..leaves.len()).collect();
        for i in 0..count {
            let j = rng.random_range(i..indexes.len());
            indexes.swap(i, j);
        }
        indexes.truncate(count);
        let batch = ours.prove_batch(&indexes).unwrap();
        let (winter_opened, winter_batch) = theirs.prove_batch(&indexes).unwrap();
        assert_eq!(
            batch,
            BatchProof::from_winter(&winter_batch),
            "depth {depth}, indexes {indexes:?}"
        );
        let opened: Vec<Digest> = indexes.iter().map(|&i| leaves[i]).collect();
        assert_eq!(to_winter(&opened), winter_opened);
        MerkleTree::verify_batch(ours.root(), &indexes, &opened, &batch).unwrap();
        WinterTree::verify_batch(theirs.root(), &indexes, &winter_opened, &winter_batch).unwrap();
        let from_winter = BatchProof::from_winter(&winter_batch);
        MerkleTree::verify_batch(ours.root(), &indexes, &opened, &from_winter).unwrap();
    }
}

#[test]
fn tampered_proofs_are_rejected() {
    let mut rng = StdRng::seed_from_u64(3);
    let leaves = random_digests(&mut rng, 64);
    let tree = MerkleTree::build(&Cpu, &leaves).unwrap();
    let mut path = tree.prove(17).unwrap();
    assert!(matches!(
        MerkleTree::verify(tree.root(), 16, &leaves[17], &path),
        Err(Error::InvalidProof)
    ));
    path[3] = leaves[0];
    assert!(matches!(
        MerkleTree::verify(tree.root(), 17, &leaves[17], &path),
        Err(Error::InvalidProof)
    ));

    let indexes = [3, 4, 40, 41, 63];
    let opened: Vec<Digest> = indexes.iter().map(|&i| leaves[i]).collect();
    let proof = tree.prove_batch(&indexes).unwrap();
    let mut wrong_leaf = opened.clone();
    wrong_leaf[2] = leaves[2];
    assert!(matches!(
        MerkleTree::verify_batch(tree.root(), &indexes, &wrong_leaf, &proof),
        Err(Error::InvalidProof)
    ));
    let mut short = proof.clone();
    short.nodes[0].pop();
    assert!(matches!(
        MerkleTree::verify_batch(tree.root(), &indexes, &opened, &short),
        Err(Error::MalformedProof { .. })
    ));
    let mut long = proof.clone();
    long.nodes[1].push(leaves[0]);
    assert!(matches!(
        MerkleTree::verify_batch(tree.root(), &indexes, &opened, &long),
        Err(Error::MalformedProof { .. })
    ));
    let mut altered = proof;
    altered.nodes[0][0] = leaves[9];
    assert!(MerkleTree::verify_batch(tree.root(), &indexes, &opened, &altered).is_err());
}

#[test]
fn the_vector_commitment_equals_winter_cryptos_tree() {
    let mut rng = StdRng::seed_from_u64(4);
    let leaves = to_winter(&random_digests(&mut rng, 256));
    let options = merkle::winter::CommitOptions {
        backend: Some(merkle::Backend::Cpu(Cpu)),
    };
    let ours = GpuMerkleTree::with_options(leaves.clone(), options).unwrap();
    let theirs = WinterTree::new(leaves.clone()).unwrap();
    assert_eq!(ours.commitment(), *theirs.root());
    assert_eq!(ours.domain_len(), 256);
    let (leaf, proof) = ours.open(77).unwrap();
    assert_eq!((leaf, proof.clone()), theirs.prove(77).unwrap());
    GpuMerkleTree::verify(ours.commitment(), 77, leaf, &proof).unwrap();
    <WinterTree as VectorCommitment<Rp64_256>>::verify(ours.commitment(), 77, leaf, &proof)
        .unwrap();
    let indexes = [0, 1, 77, 200, 255];
    let (opened, multi) = ours.open_many(&indexes).unwrap();
    let (winter_opened, winter_multi) = theirs.prove_batch(&indexes).unwrap();
    assert_eq!(opened, winter_opened);
    assert_eq!(
        (multi.depth, &multi.nodes),
        (winter_multi.depth, &winter_multi.nodes)
    );
    GpuMerkleTree::verify_many(ours.commitment(), &indexes, &opened, &multi).unwrap();
    assert_eq!(GpuMerkleTree::get_multiproof_domain_len(&multi), 256);
}

mod jive {
    //! RpJive64_256 against winter-crypto's.
    #![allow(clippy::unwrap_used)]

    use super::*;
    use merkle::{Hasher as _, RpJive64_256};
    use winter_crypto::hashers::RpJive64_256 as WinterJive;

    type JiveDigest = <WinterJive as Hasher>::Digest;

    fn jive(digest: &Digest) -> JiveDigest {
        JiveDigest::new(to_base(digest.elements()).try_into().unwrap())
    }

    fn jive_all(digests: &[Digest]) -> Vec<JiveDigest> {
        digests.iter().map(jive).collect()
    }

    #[test]
    fn constants_are_winter_cryptos() {
        let theirs = |table: &[[BaseElement; 8]; 7]| -> Vec<u64> {
            table.iter().flatten().map(|e| e.as_int()).collect()
        };
        assert_eq!(merkle::jive::ARK1.concat(), theirs(&WinterJive::ARK1));
        assert_eq!(merkle::jive::ARK2.concat(), theirs(&WinterJive::ARK2));
        for (row, values) in WinterJive::MDS.iter().enumerate() {
            for (col, value) in values.iter().enumerate() {
                let ours = merkle::jive::MDS_ROW[(col + 8 - row) % 8];
                assert_eq!(ours, value.as_int(), "MDS[{row}][{col}]");
            }
        }
    }

    /// Fixed vectors, computed with winter-crypto 0.13.1 and written here; checked against
    /// both our hash and winter-crypto's.
    #[test]
    fn known_answers() {
        let counting: Vec<Felt> = (0..8u32).map(Felt::from).collect();
        let minus_one = vec![Felt::new(MODULUS - 1); 11];
        let cases = [(&counting, KAT_COUNTING_8), (&minus_one, KAT_MINUS_ONE_11)];
        for (elements, expected) in cases {
            assert_eq!(RpJive64_256::hash_elements(elements).to_string(), expected);
            let theirs = WinterJive::hash_elements(&to_base(elements));
            let values: Vec<u64> = theirs.as_elements().iter().map(|e| e.as_int()).collect();
            let digest = Digest::from_u64s(values.try_into().unwrap()).unwrap();
            assert_eq!(digest.to_string(), expected);
        }
    }

    const KAT_COUNTING_8: &str = "77006cd9073ac152e93b4e22f897892f00e833cd336dbcb849f1321e05e1ddaa";
    const KAT_MINUS_ONE_11: &str =
        "717fea7fef589a29e29898d2342f320c135f4f7459bb17866b699faf515f7636";

    #[test]
    fn permutation_matches() {
        let mut rng = StdRng::seed_from_u64(11);
        let mut states: Vec<Vec<Felt>> = (0..32).map(|_| random_felts(&mut rng, 8)).collect();
        states.push(vec![Felt::new(MODULUS - 1); 8]);
        for felts in states {
            let mut ours: [Felt; 8] = felts.clone().try_into().unwrap();
            let mut theirs: [BaseElement; 8] = to_base(&felts).try_into().unwrap();
            RpJive64_256::permute(&mut ours);
            WinterJive::apply_permutation(&mut theirs);
            assert_eq!(to_base(&ours), theirs);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn hash_elements_matches(seed: u64, len in 0usize..40) {
            let elements = random_felts(&mut StdRng::seed_from_u64(seed), len);
            let theirs = WinterJive::hash_elements(&to_base(&elements));
            prop_assert_eq!(jive(&RpJive64_256::hash_elements(&elements)), theirs);
        }

        #[test]
        fn merge_matches(seed: u64) {
            let pair = random_digests(&mut StdRng::seed_from_u64(seed), 2);
            let theirs = WinterJive::merge(&[jive(&pair[0]), jive(&pair[1])]);
            prop_assert_eq!(jive(&RpJive64_256::merge(&pair[0], &pair[1])), theirs);
        }
    }

    #[test]
    fn trees_and_paths_match() {
        let mut rng = StdRng::seed_from_u64(12);
        for depth in 1..=10u32 {
            let leaves = random_digests(&mut rng, 1 << depth);
            let ours = MerkleTree::build_with(RpJive64_256, &Cpu, &leaves).unwrap();
            let theirs = winter_crypto::MerkleTree::<WinterJive>::new(jive_all(&leaves)).unwrap();
            assert_eq!(jive(ours.root()), *theirs.root(), "depth {depth}");
            let index = rng.random_range(0..1usize << depth);
            let (leaf, path) = theirs.prove(index).unwrap();
            assert_eq!(leaf, jive(&leaves[index]));
            assert_eq!(jive_all(&ours.prove(index).unwrap()), path);
        }
    }
}
