//! Keys made by tfhe-rs 1.8 (a dev-dependency only) for a parameter set of this crate, and
//! the same keys as this crate's types, through their raw words (for a multi-bit set, tfhe-rs's
//! multi-bit bootstrap key too).
#![allow(dead_code, clippy::unwrap_used)]

use fhe_pbs::{KeyswitchKey, Parameters, PbsKind};
use tfhe::core_crypto::prelude as tfhe_core;
use tfhe::core_crypto::prelude::{
    CiphertextModulus, DecompositionBaseLog, DecompositionLevelCount,
};

/// tfhe-rs's secret keys, key-switching key and bootstrap key, made by tfhe-rs for the test
/// set's shape.
pub struct TfheKeys {
    pub small: tfhe_core::LweSecretKeyOwned<u64>,
    pub glwe: tfhe_core::GlweSecretKeyOwned<u64>,
    pub ksk: tfhe_core::LweKeyswitchKeyOwned<u64>,
    pub bsk: tfhe_core::LweBootstrapKeyOwned<u64>,
    /// Made only for a multi-bit set, with its grouping factor.
    pub multi_bit_bsk: Option<tfhe_core::LweMultiBitBootstrapKeyOwned<u64>>,
    pub encryption: tfhe_core::EncryptionRandomGenerator<tfhe_core::DefaultRandomGenerator>,
}

impl TfheKeys {
    /// tfhe-rs's encryption of `plaintext` under the big key (the GLWE key flattened), as this
    /// crate's ciphertext.
    pub fn encrypt_big(&mut self, plaintext: u64) -> fhe_pbs::LweCiphertext {
        let big_key = self.glwe.as_lwe_secret_key();
        let mut ct = tfhe_core::LweCiphertext::new(
            0u64,
            tfhe_core::LweSize(big_key.lwe_dimension().0 + 1),
            CiphertextModulus::new_native(),
        );
        tfhe_core::encrypt_lwe_ciphertext(
            &big_key,
            &mut ct,
            tfhe_core::Plaintext(plaintext),
            tfhe_core::Gaussian::from_dispersion_parameter(
                tfhe_core::StandardDev(2f64.powi(-50)),
                0.0,
            ),
            &mut self.encryption,
        );
        fhe_pbs::LweCiphertext::from_vec(ct.as_ref().to_vec()).unwrap()
    }

    /// tfhe-rs's decryption of this crate's ciphertext under the big key, decoded mod `p`.
    pub fn decrypt_big(&self, ciphertext: fhe_pbs::LweCiphertext, p: u64) -> u64 {
        let ct = tfhe_core::LweCiphertext::from_container(
            ciphertext.into_vec(),
            CiphertextModulus::new_native(),
        );
        let phase = tfhe_core::decrypt_lwe_ciphertext(&self.glwe.as_lwe_secret_key(), &ct).0;
        fhe_pbs::lwe::decode(phase, p).unwrap()
    }
}

pub fn tfhe_keys(params: &Parameters) -> TfheKeys {
    let mut seeder = tfhe_core::new_seeder();
    let seeder = seeder.as_mut();
    let mut secret =
        tfhe_core::SecretRandomGenerator::<tfhe_core::DefaultRandomGenerator>::new(seeder.seed());
    let mut encryption =
        tfhe_core::EncryptionRandomGenerator::<tfhe_core::DefaultRandomGenerator>::new(
            seeder.seed(),
            seeder,
        );
    let small = tfhe_core::allocate_and_generate_new_binary_lwe_secret_key(
        tfhe_core::LweDimension(params.lwe_dimension().0),
        &mut secret,
    );
    let glwe = tfhe_core::allocate_and_generate_new_binary_glwe_secret_key(
        tfhe_core::GlweDimension(params.glwe_dimension().0),
        tfhe_core::PolynomialSize(params.polynomial_size().0),
        &mut secret,
    );
    let ks = params.ks_decomposition();
    let pbs = params.pbs_decomposition();
    let ksk = tfhe_core::allocate_and_generate_new_lwe_keyswitch_key(
        &glwe.as_lwe_secret_key(),
        &small,
        DecompositionBaseLog(ks.base_log().0),
        DecompositionLevelCount(ks.level_count().0),
        tfhe_core::Gaussian::from_dispersion_parameter(tfhe_core::StandardDev(2f64.powi(-30)), 0.0),
        CiphertextModulus::new_native(),
        &mut encryption,
    );
    let bsk = tfhe_core::par_allocate_and_generate_new_lwe_bootstrap_key(
        &small,
        &glwe,
        DecompositionBaseLog(pbs.base_log().0),
        DecompositionLevelCount(pbs.level_count().0),
        tfhe_core::Gaussian::from_dispersion_parameter(tfhe_core::StandardDev(2f64.powi(-50)), 0.0),
        CiphertextModulus::new_native(),
        &mut encryption,
    );
    let multi_bit_bsk = match params.pbs_kind() {
        PbsKind::Classic => None,
        PbsKind::MultiBit(g) => Some(
            tfhe_core::par_allocate_and_generate_new_lwe_multi_bit_bootstrap_key(
                &small,
                &glwe,
                DecompositionBaseLog(pbs.base_log().0),
                DecompositionLevelCount(pbs.level_count().0),
                tfhe_core::LweBskGroupingFactor(g.0),
                tfhe_core::Gaussian::from_dispersion_parameter(
                    tfhe_core::StandardDev(2f64.powi(-50)),
                    0.0,
                ),
                CiphertextModulus::new_native(),
                &mut encryption,
            ),
        ),
    };
    TfheKeys {
        small,
        glwe,
        ksk,
        bsk,
        multi_bit_bsk,
        encryption,
    }
}

/// The same keys as this crate's types, through the raw words (the layouts are tfhe-rs's).
pub fn our_keys(
    params: Parameters,
    keys: &TfheKeys,
) -> (fhe_pbs::ClientKey, fhe_pbs::EvaluationKeys) {
    let client = fhe_pbs::ClientKey::from_parts(
        params,
        fhe_pbs::LweSecretKey::from_bits(keys.small.as_ref().to_vec()).unwrap(),
        fhe_pbs::GlweSecretKey::from_bits(
            keys.glwe.as_ref().to_vec(),
            params.glwe_dimension(),
            params.polynomial_size(),
        )
        .unwrap(),
    )
    .unwrap();
    let bsk: fhe_pbs::AnyBootstrapKey = match (params.pbs_kind(), &keys.multi_bit_bsk) {
        (PbsKind::MultiBit(g), Some(multi_bit)) => fhe_pbs::MultiBitBootstrapKey::from_vec(
            multi_bit.as_ref().to_vec(),
            params.lwe_dimension(),
            g,
            params.glwe_dimension(),
            params.polynomial_size(),
            params.pbs_decomposition(),
        )
        .unwrap()
        .into(),
        _ => fhe_pbs::BootstrapKey::from_vec(
            keys.bsk.as_ref().to_vec(),
            params.lwe_dimension(),
            params.glwe_dimension(),
            params.polynomial_size(),
            params.pbs_decomposition(),
        )
        .unwrap()
        .into(),
    };
    let ksk = KeyswitchKey::from_vec(
        keys.ksk.as_ref().to_vec(),
        params.big_lwe_dimension(),
        params.lwe_dimension(),
        params.ks_decomposition(),
    )
    .unwrap();
    let evaluation = fhe_pbs::EvaluationKeys::from_parts(params, bsk, ksk).unwrap();
    (client, evaluation)
}
