//! End-to-end tests of the `pir-hints` tool: every subcommand on small databases, shards
//! combined into the same bytes as a whole run, and the error of each bad input.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsStr;
use std::fmt::Debug;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tempfile::TempDir;

/// The tool's executable: `$PIR_HINTS_BIN` if set, else where cargo built it, else (when the
/// tests were staged onto another machine) the staged binary beside this test executable.
fn tool() -> PathBuf {
    if let Some(path) = std::env::var_os("PIR_HINTS_BIN") {
        return path.into();
    }
    let built = PathBuf::from(env!("CARGO_BIN_EXE_pir-hints"));
    if built.exists() {
        return built;
    }
    let here = std::env::current_exe().unwrap();
    let dir = here.parent().unwrap();
    ["pir-hints--pir-hints--bin", "pir-hints"]
        .iter()
        .map(|name| dir.join(name))
        .find(|path| path.exists())
        .expect("the pir-hints executable: set PIR_HINTS_BIN")
}

/// Runs the tool in `dir`.
fn run<S: AsRef<OsStr> + Debug>(dir: &Path, args: &[S]) -> Output {
    Command::new(tool())
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

/// Runs the tool, which must succeed, and returns its standard output.
fn ok<S: AsRef<OsStr> + Debug>(dir: &Path, args: &[S]) -> String {
    let out = run(dir, args);
    assert!(
        out.status.success(),
        "pir-hints {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs the tool, which must fail with status `code` and say `expected` on standard error;
/// returns its standard output.
fn fails_with<S: AsRef<OsStr> + Debug>(
    dir: &Path,
    code: i32,
    args: &[S],
    expected: &str,
) -> String {
    let out = run(dir, args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(code),
        "pir-hints {args:?}: {stderr}"
    );
    assert!(
        stderr.contains(expected),
        "pir-hints {args:?} said {stderr:?}, not {expected:?}"
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs the tool, which must fail with status 1 and say `expected`.
fn fails<S: AsRef<OsStr> + Debug>(dir: &Path, args: &[S], expected: &str) -> String {
    fails_with(dir, 1, args, expected)
}

/// `generate` with `args` and, for each of these options not among them, `--scheme rms24
/// --db db.bin --entry-size 24 --key key --backend cpu --out h.hints`.
fn generate_args(args: &[&str]) -> Vec<String> {
    let defaults = [
        ("--scheme", "rms24"),
        ("--db", "db.bin"),
        ("--entry-size", "24"),
        ("--key", "key"),
        ("--backend", "cpu"),
        ("--out", "h.hints"),
    ];
    let mut all = vec!["generate".to_string()];
    all.extend(args.iter().map(|arg| arg.to_string()));
    for (option, value) in defaults {
        if !args.contains(&option) {
            all.extend([option.to_string(), value.to_string()]);
        }
    }
    all
}

/// Runs `generate` (with the defaults of [`generate_args`]), which must succeed.
fn generate(dir: &Path, args: &[&str]) -> String {
    ok(dir, &generate_args(args))
}

/// `verify` of `hints` against `db` and `key`.
fn verify<'a>(hints: &'a str, db: &'a str, key: &'a str) -> [&'a str; 7] {
    ["verify", "--hints", hints, "--db", db, "--key", key]
}

/// A directory with `db.bin`, `entries` entries of 24 bytes from seed 1, and the keys `key`
/// and `other.key`.
fn setup(entries: u64) -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let n = entries.to_string();
    let db = ["--entry-size", "24", "--seed", "1", "--out", "db.bin"];
    ok(d, &[&["gen-db", "--entries", &n][..], &db].concat());
    ok(d, &["gen-key", "--out", "key"]);
    ok(d, &["gen-key", "--out", "other.key"]);
    dir
}

/// Generates `whole.hints` over all `blocks` blocks and shards `shard0.hints`, ... cut at
/// `cuts`; checks that the shards, combined in shuffled order, give the same bytes, that
/// fewer shards give an incomplete file, and that `verify` passes on all of them.
fn whole_and_shards(
    scheme: &str,
    entries: u64,
    shape: &[&str],
    blocks: u64,
    cuts: &[u64],
) -> TempDir {
    let dir = setup(entries);
    let d = dir.path();
    let summary = generate(
        d,
        &[&["--scheme", scheme, "--out", "whole.hints"], shape].concat(),
    );
    assert!(
        summary.contains(&format!("over blocks 0..{blocks}")),
        "{summary}"
    );

    let bounds: Vec<u64> = [&[0], cuts, &[blocks]].concat();
    let mut shards = Vec::new();
    for (i, range) in bounds.windows(2).enumerate() {
        let name = format!("shard{i}.hints");
        let blocks = format!("{}..{}", range[0], range[1]);
        let args = ["--scheme", scheme, "--out", &name, "--blocks", &blocks];
        generate(d, &[&args[..], shape].concat());
        shards.push(name);
    }
    shards.rotate_left(1); // not in block order
    let mut combine = vec!["combine", "--out", "all.hints"];
    combine.extend(shards.iter().map(String::as_str));
    let said = ok(d, &combine);
    assert!(said.contains("(complete)"), "{said}");
    let whole = std::fs::read(d.join("whole.hints")).unwrap();
    assert_eq!(whole, std::fs::read(d.join("all.hints")).unwrap());

    let said = ok(
        d,
        &[
            "combine",
            "--out",
            "part.hints",
            "shard1.hints",
            "shard0.hints",
        ],
    );
    assert!(
        said.contains(&format!("blocks 0..{} of 0..{blocks}", cuts[1])),
        "{said}"
    );
    assert!(said.contains("not complete"), "{said}");

    for file in ["whole.hints", "shard1.hints", "part.hints"] {
        let said = ok(d, &verify(file, "db.bin", "key"));
        assert!(said.contains("sampled hints match"), "{said}");
    }
    dir
}

#[test]
fn rms24_whole_shards_verify_info() {
    let dir = whole_and_shards("rms24", 3000, &["--block-size", "50"], 60, &[17, 40]);
    let info = ok(dir.path(), &["info", "whole.hints"]);
    let size = std::fs::metadata(dir.path().join("whole.hints"))
        .unwrap()
        .len();
    for field in [
        format!("size: {size} bytes"),
        "scheme: rms24".into(),
        "entries (n): 3000".into(),
        "entry size (E): 24 bytes".into(),
        "block size (w): 50".into(),
        "blocks (c): 60".into(),
        "main hints (M): 6400".into(), // lambda * w
        "backup hints (q): 6400".into(),
        "lambda: 128".into(),
        "covers: blocks 0..60 (complete)".into(),
        " of 12800".into(),
    ] {
        assert!(info.contains(&field), "{info:?} lacks {field:?}");
    }
    // The key's fingerprint, never the key.
    let key: [u8; 32] = std::fs::read(dir.path().join("key"))
        .unwrap()
        .try_into()
        .unwrap();
    let hex = |bytes: &[u8]| -> String { bytes.iter().map(|b| format!("{b:02x}")).collect() };
    let fingerprint = pir_hints::MasterKey::new(&key).fingerprint();
    assert!(
        info.contains(&format!("key fingerprint: {}", hex(&fingerprint))),
        "{info}"
    );
    assert!(!info.contains(&hex(&key)), "{info}");
    let info = ok(dir.path(), &["info", "shard1.hints"]);
    assert!(
        info.contains("covers: blocks 17..40 of 0..60 (a shard; not complete)"),
        "{info}"
    );
}

#[test]
fn plinko_whole_shards_verify_info() {
    let shape = [
        "--block-size",
        "64",
        "--main-hints",
        "384",
        "--backup-hints",
        "128",
    ];
    let dir = whole_and_shards("plinko", 2000, &shape, 32, &[7, 20]);
    let info = ok(dir.path(), &["info", "whole.hints"]);
    for field in [
        "scheme: plinko",
        "blocks (c): 32",
        "main hints (M): 384",
        "backup hints (q): 128",
    ] {
        assert!(info.contains(field), "{info:?} lacks {field:?}");
    }
}

#[test]
fn gen_db_writes_the_synthetic_database_and_keeps_files() {
    let dir = setup(1000);
    let d = dir.path();
    let db = std::fs::read(d.join("db.bin")).unwrap();
    assert_eq!(db, pir_hints::synthetic_database(1, 1000, 24).unwrap());

    let again = [
        "gen-db",
        "--entries",
        "10",
        "--entry-size",
        "3",
        "--out",
        "db.bin",
    ];
    fails(d, &again, "exists");
    assert_eq!(std::fs::read(d.join("db.bin")).unwrap(), db);
    ok(d, &[&again[..], &["--force"]].concat());
    assert_eq!(std::fs::read(d.join("db.bin")).unwrap().len(), 30);
    fails(
        d,
        &[
            "gen-db",
            "--entries",
            "0",
            "--entry-size",
            "3",
            "--out",
            "e",
        ],
        "no entries",
    );
    assert!(!d.join("e").exists());

    let key = std::fs::read(d.join("key")).unwrap();
    assert_eq!(key.len(), 32);
    assert_ne!(key, std::fs::read(d.join("other.key")).unwrap());
    fails(d, &["gen-key", "--out", "key"], "never replaced");
    assert_eq!(std::fs::read(d.join("key")).unwrap(), key);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(d.join("key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    // No temporary files are left.
    let mut names: Vec<_> = std::fs::read_dir(d)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["db.bin", "key", "other.key"]);
}

#[test]
fn generate_rejects_bad_inputs() {
    let dir = setup(3000);
    let d = dir.path();
    std::fs::write(d.join("bad.db"), [0u8; 100]).unwrap();
    std::fs::write(d.join("short.key"), [0u8; 5]).unwrap();
    let check = |code: i32, args: &[&str], expected: &str| {
        fails_with(d, code, &generate_args(args), expected);
    };
    check(
        1,
        &["--db", "bad.db"],
        "bad.db: 100 bytes is not a positive multiple of the entry size 24",
    );
    check(
        1,
        &["--db", "missing.db"],
        "database: missing.db: No such file",
    );
    check(
        1,
        &["--key", "missing.key"],
        "key file: missing.key: No such file",
    );
    check(1, &["--key", "short.key"], "short.key holds 5 bytes");
    check(2, &["--blocks", "3-9"], "expected START..END");
    check(2, &["--blocks", "3..x"], "not a block number");
    check(1, &["--blocks", "7..7"], "block range 7..7 is empty");
    check(
        1,
        &["--blocks", "50..70", "--block-size", "50"],
        "not within 0..60",
    );
    check(1, &["--block-size", "0"], "block size 0");
    check(
        1,
        &["--main-hints", "0", "--backup-hints", "0"],
        "at least one hint",
    );
    check(1, &["--gpus", "0"], "--gpus needs --backend cuda or auto");
    check(2, &["--backend", "fpga"], "invalid value 'fpga'");
    check(2, &["--scheme", "pir"], "unknown scheme");
    check(1, &["--out", "nowhere/h.hints"], "cannot write in nowhere");
    check(
        1,
        &["--scheme", "plinko", "--block-size", "50"],
        "Plinko needs a power-of-two block size",
    );
    assert!(!d.join("h.hints").exists());
}

#[test]
fn combine_rejects_shards_that_do_not_belong_together() {
    let dir = setup(3000);
    let d = dir.path();
    for (out, more) in [
        ("a.hints", &["--blocks", "0..30"][..]),
        ("b.hints", &["--blocks", "30..60"]),
        ("mid.hints", &["--blocks", "20..60"]),
        ("end.hints", &["--blocks", "40..60"]),
        ("key.hints", &["--blocks", "30..60", "--key", "other.key"]),
        (
            "params.hints",
            &["--blocks", "30..60", "--main-hints", "100"],
        ),
    ] {
        generate(d, &[&["--block-size", "50", "--out", out], more].concat());
    }
    let combine = |shards: &[&str], expected: &str| {
        fails(
            d,
            &[&["combine", "--out", "out.hints"], shards].concat(),
            expected,
        );
    };
    combine(&["a.hints", "key.hints"], "different keys");
    combine(&["params.hints", "a.hints"], "different parameters");
    combine(&["a.hints", "mid.hints"], "overlap or leave a gap");
    combine(&["end.hints", "a.hints"], "overlap or leave a gap");
    combine(&["a.hints", "b.hints", "b.hints"], "overlap or leave a gap");
    combine(
        &["a.hints", "missing.hints"],
        "hints: missing.hints: No such file",
    );
    combine(&["a.hints", "db.bin"], "db.bin: not a hint file");
    assert!(!d.join("out.hints").exists());
    fails_with(d, 2, &["combine", "--out", "out.hints"], "required");
}

#[test]
fn verify_catches_wrong_keys_databases_and_damage() {
    let dir = setup(3000);
    let d = dir.path();
    generate(d, &["--block-size", "50"]);
    ok(d, &verify("h.hints", "db.bin", "key"));
    fails(
        d,
        &verify("h.hints", "db.bin", "other.key"),
        "made with another key",
    );
    fails(d, &verify("h.hints", "db.bin", "nokey"), "key file: nokey");

    let db = |entries: &str, size: &str, out: &str| {
        ok(
            d,
            &[
                "gen-db",
                "--entries",
                entries,
                "--entry-size",
                size,
                "--seed",
                "2",
                "--out",
                out,
            ],
        );
    };
    db("3000", "24", "db2.bin");
    let said = fails(
        d,
        &verify("h.hints", "db2.bin", "key"),
        "sampled hints do not match",
    );
    assert!(said.contains("wrong parity"), "{said}");
    db("2999", "24", "db3.bin");
    fails(
        d,
        &verify("h.hints", "db3.bin", "key"),
        "db3.bin does not fit h.hints",
    );
    db("3000", "25", "db4.bin");
    fails(d, &verify("h.hints", "db4.bin", "key"), "does not fit");

    // A flipped bit anywhere (here in the last backup hint's second parity, or in the middle
    // of the parities) is caught by the file's digest before any hint is compared.
    let good = std::fs::read(d.join("h.hints")).unwrap();
    for at in [good.len() - 1, good.len() / 2] {
        let mut bytes = good.clone();
        bytes[at] ^= 1;
        std::fs::write(d.join("h.hints"), &bytes).unwrap();
        let damaged = "h.hints: damaged: its SHA-256 digest does not match";
        fails(d, &verify("h.hints", "db.bin", "key"), damaged);
        fails(d, &["info", "h.hints"], damaged);
    }
    // A truncated file is refused when read.
    std::fs::write(d.join("h.hints"), &good[..good.len() - 1]).unwrap();
    fails(
        d,
        &verify("h.hints", "db.bin", "key"),
        "truncated or damaged",
    );
    fails(d, &["info", "h.hints"], "truncated or damaged");
}

#[test]
fn combine_refuses_damaged_and_truncated_shards() {
    let dir = setup(3000);
    let d = dir.path();
    for (out, blocks) in [("a.hints", "0..30"), ("b.hints", "30..60")] {
        generate(d, &["--block-size", "50", "--out", out, "--blocks", blocks]);
    }
    ok(d, &["combine", "--out", "good.hints", "a.hints", "b.hints"]);
    let good = std::fs::read(d.join("b.hints")).unwrap();
    let mut flipped = good.clone();
    flipped[good.len() / 3] ^= 0x10;
    let truncated = &good[..good.len() - 5];
    for (bytes, expected) in [
        (
            &flipped[..],
            "b.hints: damaged: its SHA-256 digest does not match",
        ),
        (truncated, "b.hints: "),
    ] {
        std::fs::write(d.join("b.hints"), bytes).unwrap();
        let said = fails(
            d,
            &["combine", "--out", "out.hints", "a.hints", "b.hints"],
            expected,
        );
        assert!(said.is_empty(), "{said}");
        assert!(!d.join("out.hints").exists());
    }
    fails(
        d,
        &["combine", "--out", "out.hints", "b.hints", "a.hints"],
        "truncated or damaged",
    );
    assert!(!d.join("out.hints").exists());
}

#[test]
#[ignore = "requires a CUDA GPU"]
fn cuda_gives_the_cpu_bytes() {
    let dir = setup(100_000);
    let d = dir.path();
    for (scheme, shape) in [
        ("rms24", &["--block-size", "300"][..]),
        (
            "plinko",
            &[
                "--block-size",
                "256",
                "--main-hints",
                "4096",
                "--backup-hints",
                "1024",
            ],
        ),
    ] {
        let scheme = ["--scheme", scheme];
        generate(d, &[&scheme[..], shape, &["--out", "cpu.hints"]].concat());
        generate(
            d,
            &[
                &scheme[..],
                shape,
                &["--backend", "cuda", "--out", "cuda.hints"],
            ]
            .concat(),
        );
        let cpu = std::fs::read(d.join("cpu.hints")).unwrap();
        assert_eq!(
            cpu,
            std::fs::read(d.join("cuda.hints")).unwrap(),
            "{scheme:?}"
        );
        let shard = [
            "--backend",
            "cuda",
            "--gpus",
            "0",
            "--blocks",
            "3..200",
            "--out",
            "s.hints",
        ];
        generate(d, &[&scheme[..], shape, &shard].concat());
        ok(d, &verify("s.hints", "db.bin", "key"));
    }
}

/// How many files named `shard-*` `dir` holds.
fn shard_files(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |entries| {
        entries
            .filter(|e| {
                let name = e.as_ref().unwrap().file_name();
                name.to_string_lossy().starts_with("shard-")
            })
            .count()
    })
}

/// Waits until `dir` holds at least `count` shard files, while `child` runs.
fn wait_for_shards(dir: &Path, count: usize, child: &mut std::process::Child) {
    let start = std::time::Instant::now();
    while shard_files(dir) < count {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before {count} shards were written"
        );
        assert!(start.elapsed().as_secs() < 120, "no shard after 120 s");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

#[test]
#[cfg(unix)]
fn an_interrupted_sharded_run_resumes_to_the_same_file() {
    let dir = setup(60_000);
    let d = dir.path();
    let shape = ["--main-hints", "20000", "--backup-hints", "20000"];
    generate(d, &[&shape[..], &["--out", "whole.hints"]].concat());
    let sharded = generate_args(
        &[
            &shape[..],
            &["--shards", "8", "--work-dir", "work", "--out", "h.hints"],
        ]
        .concat(),
    );
    let start = || {
        let mut command = Command::new(tool());
        command
            .current_dir(d)
            .args(&sharded)
            .stderr(std::process::Stdio::piped());
        // SIGINT acts as a terminal's Ctrl-C does: a runner that started the tests as a
        // background job (SIGINT ignored, which children inherit) would shield the tool.
        // SAFETY: signal() is async-signal-safe, and nothing else runs before exec.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut command, || {
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                Ok(())
            });
        }
        command.spawn().unwrap()
    };
    // SIGKILL once the first shard is written, then SIGINT once one more is.
    let work = d.join("work");
    let mut child = start();
    wait_for_shards(&work, 1, &mut child);
    child.kill().unwrap();
    child.wait().unwrap();
    let first = shard_files(&work);
    let mut child = start();
    wait_for_shards(&work, first + 1, &mut child);
    let interrupt = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(interrupt.success());
    let status = child.wait().unwrap();
    assert!(!status.success(), "the run was not interrupted");
    let second = shard_files(&work);
    assert!(second < 8 && !d.join("h.hints").exists());

    let out = run(d, &sharded);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let kept = stderr.matches("finished earlier, kept").count();
    let made = stderr.matches("): started").count();
    assert_eq!((kept, made), (second, 8 - second), "{stderr}");
    let whole = std::fs::read(d.join("whole.hints")).unwrap();
    assert_eq!(whole, std::fs::read(d.join("h.hints")).unwrap());
    let left: Vec<_> = std::fs::read_dir(d.join("work"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !name.starts_with("shard-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");

    // Run again: every shard is kept, and the file is the same.
    let out = run(d, &sharded);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.matches("finished earlier, kept").count(),
        8,
        "{stderr}"
    );
    assert_eq!(whole, std::fs::read(d.join("h.hints")).unwrap());

    // The shards of another run's work directory are refused; bad shard counts too.
    fails(
        d,
        &generate_args(&["--shards", "8", "--work-dir", "work", "--out", "o.hints"]),
        "is a shard of another run",
    );
    fails(
        d,
        &generate_args(&["--shards", "0", "--work-dir", "w0"]),
        "give from 1 to",
    );
    fails_with(d, 2, &generate_args(&["--shards", "4"]), "--work-dir");
}
