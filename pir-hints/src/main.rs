//! The `pir-hints` command-line tool: synthetic databases and keys, hint generation on the CPU
//! or GPUs (over all blocks, or a block range as one shard of a larger run), combining shards,
//! and checking and describing hint files. The README's section "pir-hints: the command-line
//! tool" shows a session and a run spread over many machines.
//!
//! Results go to standard output; parameters, progress bars and errors to standard error.
//! Errors exit with status 1, usage errors with clap's status 2.
//!
//! Built only with the feature `cli` (off by default, so that the library compiles neither
//! clap nor indicatif): `cargo build --release -p gpu-crypto-pir-hints --features cli`, or
//! `cargo install --path pir-hints --features cli`.

use std::collections::BTreeSet;
use std::error::Error as StdError;
use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::{Args, Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use pir_hints::{
    Backend, Cpu, DEFAULT_LAMBDA, HintGenerator, Hints, Job, KEY_FILE_BYTES, MAX_SYNTHETIC_BYTES,
    MappedDatabase, MasterKey, Params, Scheme, ShardEvent, ShardedRun, direct_hints,
    fill_synthetic,
};
use zeroize::Zeroizing;

/// A command's result: the value, or the error to print.
type Outcome<T = ()> = Result<T, Box<dyn StdError>>;

/// Bytes of synthetic database made and written at a time (a multiple of 64, as
/// `fill_synthetic` needs).
const CHUNK_BYTES: u64 = 64 << 20;

/// Offline hint generation for single-server PIR (RMS24 and Plinko), on the CPU or CUDA GPUs.
#[derive(Parser)]
#[command(name = "pir-hints", version)]
struct Cli {
    /// What to do.
    #[command(subcommand)]
    command: Command,
}

/// The subcommands.
#[derive(Subcommand)]
enum Command {
    /// Write a synthetic database: n entries of E bytes of a ChaCha8 keystream from a seed.
    GenDb(GenDb),
    /// Write a new random 32-byte key file (mode 0600). The key is never printed.
    GenKey(GenKey),
    /// Generate the hints of a database, or of a range of its blocks (a shard).
    Generate(Generate),
    /// Combine shards over adjacent block ranges into one hint file.
    Combine(Combine),
    /// Recompute sampled hints from the definition and compare them with a hint file.
    Verify(Verify),
    /// Print a hint file's header and valid hint count (nothing secret).
    Info(Info),
}

/// Arguments of `gen-db`.
#[derive(Args)]
struct GenDb {
    /// Entries, n.
    #[arg(long)]
    entries: u64,
    /// Bytes per entry, E.
    #[arg(long)]
    entry_size: usize,
    /// Seed of the keystream; a seed always gives the same database.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// The database file to write.
    #[arg(long)]
    out: PathBuf,
    /// Replace the output file if it exists.
    #[arg(long)]
    force: bool,
}

/// Arguments of `gen-key`.
#[derive(Args)]
struct GenKey {
    /// The key file to create; an existing file is never replaced.
    #[arg(long)]
    out: PathBuf,
}

/// Arguments of `generate`.
#[derive(Args)]
struct Generate {
    /// The scheme: rms24 or plinko.
    #[arg(long)]
    scheme: Scheme,
    /// The database file: n entries of E bytes, n given by its size.
    #[arg(long)]
    db: PathBuf,
    /// Bytes per entry, E.
    #[arg(long)]
    entry_size: usize,
    /// Entries per block, w [default: ceil(sqrt(n)); for plinko the power of two nearest
    /// sqrt(n)].
    #[arg(long)]
    block_size: Option<u64>,
    /// Main (RMS24) or regular (Plinko) hints, M [default: lambda * w].
    #[arg(long)]
    main_hints: Option<u64>,
    /// Backup hints, q [default: M].
    #[arg(long)]
    backup_hints: Option<u64>,
    /// Security parameter: of Plinko's invertible PRF, and the default hints per block entry.
    #[arg(long, default_value_t = DEFAULT_LAMBDA)]
    lambda: u32,
    /// The key file (from gen-key).
    #[arg(long)]
    key: PathBuf,
    /// The hint file to write; an existing one is replaced.
    #[arg(long)]
    out: PathBuf,
    /// Where to compute: cuda if a GPU is usable, else cpu (auto); or exactly one of them.
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    backend: BackendChoice,
    /// GPUs to use, by ordinal, comma-separated [default: every GPU].
    #[arg(long, value_delimiter = ',')]
    gpus: Option<Vec<usize>>,
    /// Cover blocks START..END only, making a shard for `combine` [default: every block].
    #[arg(long, value_name = "START..END", value_parser = parse_blocks)]
    blocks: Option<Range<u64>>,
    /// Run the job as K shards, one after another, each written to --work-dir when finished;
    /// run again after an interruption, the same command keeps finished shards and gives the
    /// same file.
    #[arg(long, value_name = "K", requires = "work_dir")]
    shards: Option<u64>,
    /// The directory that keeps the shards of --shards (created if need be; one per run).
    #[arg(long, value_name = "DIR", requires = "shards")]
    work_dir: Option<PathBuf>,
}

/// The `--backend` choices.
#[derive(Clone, Copy, ValueEnum)]
enum BackendChoice {
    /// CUDA if a GPU is usable, else the CPU (saying why).
    Auto,
    /// The CPU, on every core.
    Cpu,
    /// CUDA; an error if no GPU is usable.
    Cuda,
}

/// Arguments of `combine`.
#[derive(Args)]
struct Combine {
    /// The hint file to write; an existing one is replaced.
    #[arg(long)]
    out: PathBuf,
    /// The shards, in any order: hint files of one key and parameters over adjacent block
    /// ranges.
    #[arg(required = true)]
    shards: Vec<PathBuf>,
}

/// Arguments of `verify`.
#[derive(Args)]
struct Verify {
    /// The hint file to check.
    #[arg(long)]
    hints: PathBuf,
    /// The database it was generated from.
    #[arg(long)]
    db: PathBuf,
    /// The key file it was generated with.
    #[arg(long)]
    key: PathBuf,
    /// Random hints to check, besides the first and last hint of each kind, which are always
    /// checked.
    #[arg(long, default_value_t = 16)]
    samples: u64,
    /// Seed of the random sample [default: a random seed, printed].
    #[arg(long)]
    seed: Option<u64>,
}

/// Arguments of `info`.
#[derive(Args)]
struct Info {
    /// The hint file.
    file: PathBuf,
}

fn main() -> ExitCode {
    let outcome = match Cli::parse().command {
        Command::GenDb(args) => gen_db(&args),
        Command::GenKey(args) => gen_key(&args),
        Command::Generate(args) => generate(&args),
        Command::Combine(args) => combine(&args),
        Command::Verify(args) => verify(&args),
        Command::Info(args) => info(&args),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {}", explain(error.as_ref()));
            ExitCode::FAILURE
        }
    }
}

/// The error's message followed by those of its sources, leaving out any a message already
/// includes.
fn explain(error: &dyn StdError) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message = format!("{message}: {text}");
        }
        source = cause.source();
    }
    message
}

/// `gen-db`: the synthetic database of `pir_hints::fill_synthetic`, written chunk by chunk to
/// a temporary file renamed over the output when complete.
fn gen_db(args: &GenDb) -> Outcome {
    // Refuse shapes that hint generation would refuse.
    Params::new(Scheme::Rms24, args.entries, args.entry_size)?;
    let len = args
        .entries
        .checked_mul(args.entry_size as u64)
        .filter(|&len| len <= MAX_SYNTHETIC_BYTES)
        .ok_or_else(|| {
            format!(
                "{} entries of {} bytes is more than the {MAX_SYNTHETIC_BYTES} bytes of a \
                 synthetic database",
                args.entries, args.entry_size
            )
        })?;
    if !args.force && args.out.exists() {
        return Err(format!("{} exists; pass --force to replace it", args.out.display()).into());
    }
    let io = |e: std::io::Error| format!("{}: {e}", args.out.display());
    let mut builder = tempfile::Builder::new();
    builder.prefix(".pir-hints-").suffix(".partial");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // A database is not secret: readable like any new file (the umask applies).
        builder.permissions(std::fs::Permissions::from_mode(0o644));
    }
    let mut temp = builder.tempfile_in(directory_of(&args.out)).map_err(io)?;

    let bar = progress_bar(
        len,
        "{bytes}/{total_bytes} ({binary_bytes_per_sec}, eta {eta})",
    )?;
    let mut chunk = vec![0u8; len.min(CHUNK_BYTES) as usize];
    let mut offset = 0;
    while offset < len {
        let piece = &mut chunk[..(len - offset).min(CHUNK_BYTES) as usize];
        fill_synthetic(args.seed, offset, piece)?;
        temp.write_all(piece).map_err(io)?;
        offset += piece.len() as u64;
        bar.inc(piece.len() as u64);
    }
    temp.as_file().sync_all().map_err(io)?;
    bar.finish_and_clear();
    if args.force {
        temp.persist(&args.out).map_err(|e| io(e.error))?;
    } else {
        temp.persist_noclobber(&args.out).map_err(|e| io(e.error))?;
    }
    println!(
        "{}: {} entries of {} bytes ({len} bytes) from seed {}",
        args.out.display(),
        args.entries,
        args.entry_size,
        args.seed
    );
    Ok(())
}

/// The directory a file is in (`.` for a bare file name).
fn directory_of(path: &Path) -> &Path {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// `gen-key`: 32 bytes from the operating system's random source, in a new file only the
/// owner can read.
fn gen_key(args: &GenKey) -> Outcome {
    let mut key = Zeroizing::new([0u8; KEY_FILE_BYTES]);
    os_random(&mut key[..])?;
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let io = |e: std::io::Error| format!("{}: {e}", args.out.display());
    let mut file = options.open(&args.out).map_err(|e| match e.kind() {
        ErrorKind::AlreadyExists => format!(
            "{} exists; a key file is never replaced",
            args.out.display()
        ),
        _ => io(e),
    })?;
    file.write_all(&key[..]).map_err(io)?;
    file.sync_all().map_err(io)?;
    println!(
        "{}: a new key, fingerprint {}",
        args.out.display(),
        hex(&MasterKey::new(&key).fingerprint())
    );
    Ok(())
}

/// Fills `out` from `/dev/urandom`.
fn os_random(out: &mut [u8]) -> Outcome {
    File::open("/dev/urandom")
        .and_then(|mut random| random.read_exact(out))
        .map_err(|e| format!("/dev/urandom: {e}").into())
}

/// Says what kind of file a library I/O error is about (its message gives only the path).
fn naming(kind: &'static str) -> impl Fn(pir_hints::Error) -> Box<dyn StdError> {
    move |error| match error {
        pir_hints::Error::Io { .. } => format!("{kind}: {error}").into(),
        _ => error.into(),
    }
}

/// `generate`: the hints of the database over all blocks or `--blocks`, on the chosen backend.
fn generate(args: &Generate) -> Outcome {
    let mapped = MappedDatabase::open(&args.db, args.entry_size).map_err(naming("database"))?;
    let db = mapped.database();
    let params = generate_params(args, db.entries())?;
    let key = MasterKey::from_file(&args.key).map_err(naming("key file"))?;
    let mut job = Job::new(params, &key);
    if let Some(blocks) = &args.blocks {
        job = job.with_blocks(blocks.clone())?;
    }
    // Fail now, not after the run, if the output cannot be written.
    tempfile::tempfile_in(directory_of(&args.out))
        .map_err(|e| format!("cannot write in {}: {e}", directory_of(&args.out).display()))?;
    let backend = backend(args.backend, args.gpus.as_deref())?;
    eprintln!("{params}");
    eprintln!(
        "blocks {:?} of 0..{}, on {}",
        job.blocks(),
        params.blocks(),
        backend.name()
    );

    let (work, unit) = job.work();
    let bar = progress_bar(
        work,
        &format!("{{human_pos}}/{{human_len}} {unit} ({{per_sec}}, eta {{eta}})"),
    )?;
    let start = Instant::now();
    let hints = match (args.shards, &args.work_dir) {
        (Some(shards), Some(work_dir)) => {
            let run = ShardedRun::new(job.clone(), shards, work_dir)?;
            bar.set_length(run.work()?);
            // On standard error, above the bar (or alone where the bar is hidden).
            let say = |event| {
                let line = match event {
                    ShardEvent::Kept { index, blocks } => {
                        format!(
                            "shard {index} of {shards} (blocks {blocks:?}): finished earlier, kept"
                        )
                    }
                    ShardEvent::Started {
                        index,
                        blocks,
                        replacing,
                    } => {
                        let again = replacing.map(|why| format!(", made again: {why}"));
                        format!(
                            "shard {index} of {shards} (blocks {blocks:?}): started{}",
                            again.unwrap_or_default()
                        )
                    }
                    ShardEvent::Written { index, path } => {
                        format!("shard {index} of {shards}: written to {}", path.display())
                    }
                };
                bar.suspend(|| eprintln!("{line}"));
            };
            run.run(&backend, &db, &|done| bar.inc(done), &mut { say })?
        }
        _ => backend.generate_with_progress(&job, &db, &|done| bar.inc(done))?,
    };
    let seconds = start.elapsed().as_secs_f64();
    bar.finish_and_clear();
    hints.write(&args.out)?;
    println!(
        "{}: {} hints, {} valid, over blocks {:?} in {seconds:.2} s ({:.1} {unit}/s) on {}",
        args.out.display(),
        params.total_hints(),
        hints.valid_count(),
        hints.blocks(),
        work as f64 / seconds.max(1e-9),
        backend.name()
    );
    Ok(())
}

/// The parameters `generate` asks for, for a database of `entries` entries. Hint counts
/// default to `lambda * w` main and as many backup hints, for the `w` and `lambda` chosen.
fn generate_params(args: &Generate, entries: u64) -> Outcome<Params> {
    let mut params =
        Params::new(args.scheme, entries, args.entry_size)?.with_lambda(args.lambda)?;
    if let Some(block_size) = args.block_size {
        params = params.with_block_size(block_size)?;
    }
    if args.main_hints.is_some() || args.backup_hints.is_some() {
        let main = args.main_hints.unwrap_or(params.main_hints());
        params = params.with_hints(main, args.backup_hints.unwrap_or(main))?;
    }
    Ok(params)
}

/// Parses `--blocks START..END`.
fn parse_blocks(text: &str) -> Result<Range<u64>, String> {
    let (start, end) = text
        .split_once("..")
        .ok_or_else(|| format!("expected START..END, such as 0..64, not {text:?}"))?;
    let block = |number: &str| {
        number
            .parse::<u64>()
            .map_err(|e| format!("{number:?} in {text:?} is not a block number: {e}"))
    };
    Ok(block(start)?..block(end)?)
}

/// The backend `--backend` and `--gpus` ask for. Never falls back from a GPU the user named.
fn backend(choice: BackendChoice, gpus: Option<&[usize]>) -> Outcome<Backend> {
    match (choice, gpus) {
        (BackendChoice::Cpu, Some(_)) => Err("--gpus needs --backend cuda or auto".into()),
        (BackendChoice::Cpu, None) => Ok(Backend::Cpu(Cpu)),
        (BackendChoice::Auto, None) => Ok(Backend::best()),
        (BackendChoice::Cuda | BackendChoice::Auto, gpus) => cuda(gpus)
            .map_err(|e| format!("cannot use the CUDA backend: {}", explain(e.as_ref())).into()),
    }
}

/// The CUDA backend on the GPUs `gpus`, or on all of them.
#[cfg(feature = "cuda")]
fn cuda(gpus: Option<&[usize]>) -> Outcome<Backend> {
    let cuda = match gpus {
        None => pir_hints::Cuda::new()?,
        Some(ordinals) => {
            let distinct: BTreeSet<_> = ordinals.iter().collect();
            if distinct.len() != ordinals.len() {
                return Err(format!("--gpus lists a GPU twice: {ordinals:?}").into());
            }
            let opened = ordinals.iter().map(|&ordinal| kernels::Gpu::new(ordinal));
            pir_hints::Cuda::on(opened.collect::<Result<_, _>>()?)?
        }
    };
    Ok(Backend::Cuda(cuda))
}

/// Without the `cuda` feature there is no CUDA backend.
#[cfg(not(feature = "cuda"))]
fn cuda(_gpus: Option<&[usize]>) -> Outcome<Backend> {
    Err(
        "this build has no CUDA backend: it was built without the `cuda` feature (install \
         it with `cargo install --path pir-hints --features cli,cuda`, or build it with \
         `cargo build --release -p gpu-crypto-pir-hints --features cli,cuda`)"
            .into(),
    )
}

/// A progress bar of `len` units on standard error (hidden unless it is a terminal), with
/// the elapsed time, a bar, and `template`.
fn progress_bar(len: u64, template: &str) -> Outcome<ProgressBar> {
    let style =
        ProgressStyle::with_template(&format!("{{elapsed_precise}} [{{bar:40}}] {template}"))?
            .progress_chars("=> ");
    Ok(ProgressBar::new(len).with_style(style))
}

/// `combine`: folds the shards together in block order, holding two at a time.
fn combine(args: &Combine) -> Outcome {
    let mut shards = args.shards.clone();
    shards.sort_by_cached_key(|path| first_block(path));
    let mut files = shards.iter();
    let mut all = match files.next() {
        Some(first) => Hints::read(first).map_err(naming("hints"))?,
        None => return Err("no shards to combine".into()),
    };
    for path in files {
        all.combine(&Hints::read(path).map_err(naming("hints"))?)
            .map_err(|e| format!("cannot add {}: {e}", path.display()))?;
    }
    all.write(&args.out)?;
    println!(
        "{}: {} shards combined: {}",
        args.out.display(),
        shards.len(),
        coverage(&all)
    );
    Ok(())
}

/// The first block of a hint file's range, from its header, or 0 for a file that is not a
/// readable hint file, which `Hints::read` then reports.
fn first_block(path: &Path) -> u64 {
    Hints::read_header(path).map_or(0, |header| header.blocks.start)
}

/// The block range of hints and whether it is all of them.
fn coverage(hints: &Hints) -> String {
    if hints.is_complete() {
        format!("blocks {:?} (complete)", hints.blocks())
    } else {
        format!(
            "blocks {:?} of 0..{} (a shard; not complete)",
            hints.blocks(),
            hints.params().blocks()
        )
    }
}

/// `verify`: the key and database must match the file; then sampled hints are recomputed with
/// `direct_hints` and compared.
fn verify(args: &Verify) -> Outcome {
    let hints = Hints::read(&args.hints).map_err(naming("hints"))?;
    let params = *hints.params();
    let key = MasterKey::from_file(&args.key).map_err(naming("key file"))?;
    if key.fingerprint() != *hints.fingerprint() {
        return Err(format!(
            "{} was made with another key: its key fingerprint is {}, that of {} is {}",
            args.hints.display(),
            hex(hints.fingerprint()),
            args.key.display(),
            hex(&key.fingerprint())
        )
        .into());
    }
    let mapped = MappedDatabase::open(&args.db, params.entry_size()).map_err(naming("database"))?;
    let db = mapped.database();
    db.check(&params).map_err(|e| {
        format!(
            "{} does not fit {}: {e}",
            args.db.display(),
            args.hints.display()
        )
    })?;

    let seed = match args.seed {
        Some(seed) => seed,
        None => {
            let mut bytes = [0u8; 8];
            os_random(&mut bytes)?;
            u64::from_le_bytes(bytes)
        }
    };
    let sample = sample_hints(&params, args.samples, seed);
    let expected = direct_hints(&params, &key, &db, hints.blocks(), &sample)?;
    let mut wrong = 0;
    for value in &expected {
        let j = value.hint;
        let mut differ = Vec::new();
        if hints.is_valid(j) != value.valid {
            differ.push("validity");
        }
        if hints.parity(j) != Some(&value.parity[..]) {
            differ.push("parity");
        }
        if hints.second_parity(j) != value.second.as_deref() {
            differ.push("second parity");
        }
        if !differ.is_empty() {
            wrong += 1;
            let kind = if j < params.main_hints() {
                "main"
            } else {
                "backup"
            };
            println!("hint {j} ({kind}): wrong {}", differ.join(", "));
        }
    }
    if wrong > 0 {
        return Err(format!(
            "{}: {wrong} of {} sampled hints do not match; sample seed {seed}",
            args.hints.display(),
            sample.len()
        )
        .into());
    }
    println!(
        "{}: {} sampled hints match, over {}; sample seed {seed}",
        args.hints.display(),
        sample.len(),
        coverage(&hints)
    );
    Ok(())
}

/// The hints `verify` checks: the first and last main and backup hints, and `random` more
/// drawn from all hints with `seed`, all distinct, ascending.
fn sample_hints(params: &Params, random: u64, seed: u64) -> Vec<u64> {
    let (main, total) = (params.main_hints(), params.total_hints());
    let mut sample = BTreeSet::new();
    if main > 0 {
        sample.extend([0, main - 1]);
    }
    if total > main {
        sample.extend([main, total - 1]);
    }
    let size = (sample.len() as u64).saturating_add(random).min(total);
    if size == total {
        return (0..total).collect();
    }
    let mut rng = SplitMix64(seed);
    while (sample.len() as u64) < size {
        sample.insert(rng.below(total));
    }
    sample.into_iter().collect()
}

/// SplitMix64 (Steele, Lea and Flood, 2014): enough randomness to pick sample hints.
struct SplitMix64(u64);

impl SplitMix64 {
    /// The next output.
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number below `bound`, by multiplication (its bias is below `bound / 2^64`).
    fn below(&mut self, bound: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(bound)) >> 64) as u64
    }
}

/// `info`: the header of a hint file, its valid hints and size.
fn info(args: &Info) -> Outcome {
    let hints = Hints::read(&args.file).map_err(naming("hints"))?;
    let size = std::fs::metadata(&args.file)
        .map_err(|e| format!("{}: {e}", args.file.display()))?
        .len();
    let p = hints.params();
    println!("file: {}", args.file.display());
    println!("size: {size} bytes");
    println!("scheme: {}", p.scheme());
    println!("entries (n): {}", p.entries());
    println!("entry size (E): {} bytes", p.entry_size());
    println!("block size (w): {}", p.block_size());
    println!("blocks (c): {}", p.blocks());
    println!("main hints (M): {}", p.main_hints());
    println!("backup hints (q): {}", p.backup_hints());
    println!("lambda: {}", p.lambda());
    println!("covers: {}", coverage(&hints));
    println!(
        "valid hints: {} of {}",
        hints.valid_count(),
        p.total_hints()
    );
    println!("key fingerprint: {}", hex(hints.fingerprint()));
    Ok(())
}

/// Bytes in lowercase hexadecimal.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}
