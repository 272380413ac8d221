//! Secured servers' material, made at test time: TLS keys and certificates
//! (the JDK's `keytool`, and `openssl` to export the client's private key
//! as PEM) and SASL JAAS files. Nothing is downloaded and nothing secret is
//! kept: every cluster makes its own in its temporary directory, with a
//! random store password.
//!
//! See [`ZkClusterBuilder::tls`](crate::ZkClusterBuilder::tls) and
//! [`ZkClusterBuilder::sasl_user`](crate::ZkClusterBuilder::sasl_user).

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::launcher::error::LaunchError;

/// Environment variable naming the `keytool` binary (default: `keytool` beside `$JAVA`, else on `PATH`).
pub const KEYTOOL_ENV: &str = "KEYTOOL";

/// Environment variable naming the `openssl` binary (default: `openssl` on `PATH`).
pub const OPENSSL_ENV: &str = "OPENSSL";

/// Whether a TLS server asks its clients for a certificate (`ssl.clientAuth`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// Clients need only trust the server's CA (`ssl.clientAuth=none`).
    None,
    /// Clients must present a certificate signed by the test CA (`ssl.clientAuth=need`).
    Need,
}

/// The TLS files of a secured cluster, all in its temporary directory.
///
/// The server's certificate names `127.0.0.1` and `localhost`; the client's
/// is signed by the same CA (subject `CN=zk-rwlock-test-client`).
#[derive(Debug, Clone)]
pub struct TlsFiles {
    /// The CA certificate, PEM: what clients trust.
    pub ca_pem: PathBuf,
    /// A client certificate signed by the CA, PEM.
    pub client_cert_pem: PathBuf,
    /// The client certificate's private key, PEM (PKCS#8).
    pub client_key_pem: PathBuf,
    /// The server's key store (PKCS#12).
    pub(crate) keystore: PathBuf,
    /// The server's trust store (PKCS#12: the CA).
    pub(crate) truststore: PathBuf,
    /// The stores' password (random per cluster).
    pub(crate) password: String,
    /// Whether clients must present a certificate.
    pub(crate) client_auth: ClientAuth,
}

impl TlsFiles {
    /// The `zoo.cfg` lines of a TLS-only client port on `127.0.0.1:port`.
    pub(crate) fn config(&self, port: u16) -> String {
        format!(
            "secureClientPort={port}\n\
             secureClientPortAddress=127.0.0.1\n\
             serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n\
             ssl.keyStore.location={keystore}\n\
             ssl.keyStore.password={password}\n\
             ssl.keyStore.type=PKCS12\n\
             ssl.trustStore.location={truststore}\n\
             ssl.trustStore.password={password}\n\
             ssl.trustStore.type=PKCS12\n\
             ssl.clientAuth={auth}\n",
            keystore = self.keystore.display(),
            truststore = self.truststore.display(),
            password = self.password,
            auth = match self.client_auth {
                ClientAuth::None => "none",
                ClientAuth::Need => "need",
            },
        )
    }
}

/// A password for this run's stores: not a secret worth keeping (the
/// stores are deleted with the cluster), but not a constant either.
fn random_password() -> String {
    let mut rng = crate::SplitMix64(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
            ^ u64::from(std::process::id()),
    );
    format!("{:016x}{:016x}", rng.next_u64(), rng.next_u64())
}

fn tool(env: &str, default: OsString) -> OsString {
    std::env::var_os(env).filter(|t| !t.is_empty()).unwrap_or(default)
}

/// `keytool` beside the `java` binary when that is a path, else on `PATH`.
fn keytool(java: &OsString) -> OsString {
    let beside = Path::new(java).parent().map(|dir| dir.join("keytool"));
    let default = match beside {
        Some(path) if path.is_file() => path.into_os_string(),
        _ => OsString::from("keytool"),
    };
    tool(KEYTOOL_ENV, default)
}

/// Runs one tool invocation; a clear error when it is missing or fails.
fn run(program: &OsString, args: &[&str], dir: &Path, install: &str) -> Result<(), LaunchError> {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| match e.kind() {
            io::ErrorKind::NotFound | io::ErrorKind::PermissionDenied => LaunchError::ToolNotFound {
                tool: program.to_string_lossy().into_owned(),
                install: install.to_owned(),
                source: e,
            },
            _ => LaunchError::io(format!("running {}", program.to_string_lossy()), e),
        })?;
    if out.status.success() {
        return Ok(());
    }
    Err(LaunchError::ToolFailed {
        command: format!("{} {}", program.to_string_lossy(), args.join(" ")),
        status: out.status.to_string(),
        output: format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    })
}

const KEYTOOL_INSTALL: &str =
    "install a JDK (e.g. `sudo apt-get install -y openjdk-17-jdk-headless`) or set KEYTOOL";
const OPENSSL_INSTALL: &str = "install OpenSSL (e.g. `sudo apt-get install -y openssl`) or set OPENSSL";

/// Makes a CA, a server key store and trust store, and a client
/// certificate and key (PEM) in `dir`.
pub(crate) fn make_tls(
    dir: &Path,
    java: &OsString,
    client_auth: ClientAuth,
) -> Result<TlsFiles, LaunchError> {
    std::fs::create_dir_all(dir).map_err(|e| LaunchError::io(format!("creating {}", dir.display()), e))?;
    let keytool = keytool(java);
    let openssl = tool(OPENSSL_ENV, OsString::from("openssl"));
    let password = random_password();
    let pass = password.as_str();
    // keytool is a JVM: start it the quick way (as the servers are).
    let quick = [
        "-J-XX:TieredStopAtLevel=1",
        "-J-XX:+UseSerialGC",
        "-J-XX:-UsePerfData",
    ];
    let kt = |args: &[&str]| run(&keytool, &[&quick[..], args].concat(), dir, KEYTOOL_INSTALL);
    let store =
        |file: &'static str| -> [&str; 6] { ["-keystore", file, "-storetype", "PKCS12", "-storepass", pass] };
    let genkey = |alias: &str, file: &'static str, dname: &str, ca: bool| {
        let mut args = vec![
            "-genkeypair",
            "-alias",
            alias,
            "-keyalg",
            "EC",
            "-groupname",
            "secp256r1",
            "-dname",
            dname,
            "-validity",
            "2",
            "-keypass",
            pass,
        ];
        if ca {
            args.extend(["-ext", "bc:c"]);
        }
        args.extend(store(file));
        kt(&args)
    };
    genkey("ca", "ca.p12", "CN=zk-rwlock-test-ca", true)?;
    kt(&[
        &["-exportcert", "-rfc", "-alias", "ca", "-file", "ca.pem"][..],
        &store("ca.p12"),
    ]
    .concat())?;
    // A key pair, and its certificate signed by the CA (PEM).
    let signed = |alias: &str, file: &'static str, dname: &str, csr: &str, pem: &str| {
        genkey(alias, file, dname, false)?;
        kt(&[&["-certreq", "-alias", alias, "-file", csr][..], &store(file)].concat())?;
        let gencert = [
            "-gencert",
            "-alias",
            "ca",
            "-infile",
            csr,
            "-outfile",
            pem,
            "-rfc",
            "-validity",
            "2",
            "-ext",
            "SAN=ip:127.0.0.1,dns:localhost",
            "-ext",
            "EKU=serverAuth,clientAuth",
        ];
        kt(&[&gencert[..], &store("ca.p12")].concat())
    };
    // The server's store holds its key with the signed chain.
    signed("server", "server.p12", "CN=127.0.0.1", "server.csr", "server.pem")?;
    kt(&[
        &["-importcert", "-noprompt", "-alias", "ca", "-file", "ca.pem"][..],
        &store("server.p12"),
    ]
    .concat())?;
    kt(&[
        &["-importcert", "-alias", "server", "-file", "server.pem"][..],
        &store("server.p12"),
    ]
    .concat())?;
    kt(&[
        &["-importcert", "-noprompt", "-alias", "ca", "-file", "ca.pem"][..],
        &store("trust.p12"),
    ]
    .concat())?;
    // The client's certificate is client.pem. keytool does not export
    // private keys: openssl reads the key from the client's store.
    signed(
        "client",
        "client.p12",
        "CN=zk-rwlock-test-client",
        "client.csr",
        "client.pem",
    )?;
    let passin = format!("pass:{pass}");
    let export = [
        "pkcs12",
        "-in",
        "client.p12",
        "-nocerts",
        "-nodes",
        "-passin",
        &passin,
        "-out",
        "client-key.pem",
    ];
    run(&openssl, &export, dir, OPENSSL_INSTALL)?;
    // The exported EC key leaves out its public key, which the ring crypto
    // provider needs: `openssl ec` writes it back (as docs/security.md tells users).
    let complete = ["ec", "-in", "client-key.pem", "-out", "client-key.pem"];
    run(&openssl, &complete, dir, OPENSSL_INSTALL)?;
    Ok(TlsFiles {
        ca_pem: dir.join("ca.pem"),
        client_cert_pem: dir.join("client.pem"),
        client_key_pem: dir.join("client-key.pem"),
        keystore: dir.join("server.p12"),
        truststore: dir.join("trust.p12"),
        password,
        client_auth,
    })
}

/// The JAAS file of a server that accepts SASL DIGEST-MD5 for `users`.
pub(crate) fn jaas(users: &[(String, String)]) -> String {
    let mut text = String::from("Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule required");
    for (user, password) in users {
        text.push_str(&format!("\n  user_{user}=\"{password}\""));
    }
    text.push_str(";\n};\n");
    text
}
