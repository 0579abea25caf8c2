//! The two INF sources (rsndkp.inx, rsndk_mp.inx), the Windows packaging
//! task (Makefile.toml) and the Windows workflow, checked on Linux against
//! Microsoft's documented rules (each test names its sources; "WDD" is
//! learn.microsoft.com/windows-hardware/drivers, whose Markdown is
//! github.com/MicrosoftDocs/windows-driver-docs). What only InfVerif and
//! inf2cat on Windows can say is not claimed here: these tests catch the
//! mistakes a review found before those tools ever ran.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use rsndk_package::inf::{Inf, Section, TargetOsVersion};
use rsndk_package::layout::{self, InfFile};
use rsndk_package::makefile::task_args;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(relative: &str) -> String {
    let path = root().join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn load(inf: InfFile) -> Inf {
    let text = read(inf.source);
    assert!(text.is_ascii(), "{} must stay ASCII", inf.source);
    Inf::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", inf.source))
}

fn protocol() -> Inf {
    load(layout::PROTOCOL_INF)
}

fn miniport() -> Inf {
    load(layout::MINIPORT_INF)
}

fn section<'a>(inf: &'a Inf, name: &str, file: &str) -> &'a Section {
    inf.section(name)
        .unwrap_or_else(|| panic!("{file}: no [{name}] section"))
}

/// One model of `[Manufacturer]`: its decoration and its device lines
/// (description, DDInstall section, hardware id).
struct Model {
    decoration: TargetOsVersion,
    devices: Vec<(String, String)>,
}

/// The models of `inf`, in `[Manufacturer]` order.
fn models(inf: &Inf, file: &str) -> Vec<Model> {
    let manufacturer = section(inf, "Manufacturer", file);
    assert_eq!(manufacturer.lines.len(), 1, "{file}: one manufacturer");
    let line = &manufacturer.lines[0];
    let base = line.value(0);
    line.values[1..]
        .iter()
        .map(|d| {
            let decoration = TargetOsVersion::parse(d)
                .unwrap_or_else(|| panic!("{file}: decoration {d:?} is no TargetOSVersion"));
            let models = section(inf, &format!("{base}.{d}"), file);
            let devices = models
                .lines
                .iter()
                .map(|l| (l.value(0).to_owned(), l.value(1).to_owned()))
                .collect();
            Model {
                decoration,
                devices,
            }
        })
        .collect()
}

/// Every DDInstall section of `inf` with the build of its model.
fn installs(inf: &Inf, file: &str) -> Vec<(u32, String)> {
    models(inf, file)
        .into_iter()
        .flat_map(|m| {
            let build = m.decoration.build.expect("a build number");
            m.devices
                .into_iter()
                .map(move |(install, _)| (build, install))
        })
        .collect()
}

/// The newest model's build (the 25341 driver-store model).
fn newest_build(inf: &Inf, file: &str) -> u32 {
    models(inf, file)
        .iter()
        .filter_map(|m| m.decoration.build)
        .max()
        .expect("a decorated model")
}

/// [Version] (WDD install/inf-version-section.md; the classes from
/// install/system-defined-device-setup-classes-available-to-vendors.md):
/// `$WINDOWS NT$`; the protocol in class NetTrans
/// {4d36e975-e325-11ce-bfc1-08002be10318}, the virtual miniport in Net
/// {4d36e972-e325-11ce-bfc1-08002be10318} (the MUX sample's muxp.inf and
/// mux_mp.inf); one catalog for the package, the one inf2cat makes and
/// stampinf's `-c` writes; `PnpLockdown = 1`; `DriverVer` left for
/// stampinf.
#[test]
fn version_sections() {
    let stamp_args: Vec<Vec<String>> = ["stampinf-rsndkp", "stampinf-rsndk-mp"]
        .iter()
        .map(|t| task_args(&read("Makefile.toml"), t).unwrap())
        .collect();
    for (inf, file, class, guid) in [
        (
            protocol(),
            layout::PROTOCOL_INF.source,
            "NetTrans",
            "{4d36e975-e325-11ce-bfc1-08002be10318}",
        ),
        (
            miniport(),
            layout::MINIPORT_INF.source,
            "Net",
            "{4d36e972-e325-11ce-bfc1-08002be10318}",
        ),
    ] {
        let v = section(&inf, "Version", file);
        assert_eq!(v.get("Signature"), Some("$WINDOWS NT$"), "{file}");
        assert_eq!(v.get("Class"), Some(class), "{file}");
        assert!(
            v.get("ClassGuid")
                .is_some_and(|g| g.eq_ignore_ascii_case(guid)),
            "{file}: ClassGuid {:?}, not {guid}",
            v.get("ClassGuid")
        );
        assert_eq!(v.get("CatalogFile"), Some(layout::CATALOG), "{file}");
        assert_eq!(v.get("PnpLockdown"), Some("1"), "{file}");
        assert_eq!(
            v.get("DriverVer"),
            Some(""),
            "{file}: stampinf writes DriverVer"
        );
    }
    for args in &stamp_args {
        let catalog = args
            .iter()
            .position(|a| a == "-c")
            .map(|i| args[i + 1].as_str());
        assert_eq!(catalog, Some(layout::CATALOG), "stampinf -c in {args:?}");
        assert!(
            args.windows(2).any(|w| w == ["-d", "*"]),
            "stampinf -d * in {args:?}"
        );
        assert!(
            args.windows(2).any(|w| w == ["-v", "*"]),
            "stampinf -v * in {args:?}"
        );
    }
}

/// [Manufacturer] (WDD install/inf-manufacturer-section.md): both INFs
/// have the same two models, `NT$ARCH$.10.0...19041` (Windows Server 2022,
/// build 20348, copies to System32 as the network installation UI needs
/// before build 25341) and `NT$ARCH$.10.0...25341` (the driver store, as
/// the MUX sample's newer model); a universal INF's TargetOSVersion holds
/// no ProductType and no SuiteMask (install/using-a-universal-inf-file.md);
/// each model installs exactly the component the other INF expects.
#[test]
fn models_and_decorations() {
    let expected = ["NT$ARCH$.10.0...19041", "NT$ARCH$.10.0...25341"];
    for (inf, file, id) in [
        (protocol(), layout::PROTOCOL_INF.source, layout::PROTOCOL_ID),
        (miniport(), layout::MINIPORT_INF.source, layout::MINIPORT_ID),
    ] {
        let models = models(&inf, file);
        let decorations: Vec<&str> = models.iter().map(|m| m.decoration.text.as_str()).collect();
        assert_eq!(decorations, expected, "{file}");
        for m in &models {
            let d = &m.decoration;
            assert_eq!(d.architecture, "$ARCH$", "{file}: {}", d.text);
            assert_eq!(
                (d.major, d.minor),
                (Some(10), Some(0)),
                "{file}: {}",
                d.text
            );
            assert!(
                d.product_type.is_empty() && d.suite_mask.is_empty(),
                "{file}: {} has a ProductType or SuiteMask",
                d.text
            );
            let ids: Vec<&str> = m.devices.iter().map(|(_, id)| id.as_str()).collect();
            assert_eq!(ids, [id], "{file}: {}", d.text);
        }
    }
    // "Only the notify object creates the virtual miniport": never offered
    // in the Add Hardware lists (WDD network/installation-requirements-
    // for-network-mux-intermediate-drivers.md; mux_mp.inf).
    let inf = miniport();
    let flags = section(&inf, "ControlFlags", "rsndk_mp.inx");
    assert_eq!(flags.get("ExcludeFromSelect"), Some(layout::MINIPORT_ID));
}

/// One service (#23 item 2; the MUX sample's mux_mp.inf, `AddService =
/// MUXP, 2`): every DDInstall.Services section of both INFs adds exactly
/// one service, the same one, whose name is also each component's
/// `Ndi\Service` and the protocol name the driver registers
/// (src/driver/protocol.rs); flags 0 for the protocol, 2
/// (SPSVCINST_ASSOCSERVICE) for the device whose function driver it is
/// (WDD install/inf-addservice-directive.md); the service sections agree
/// but for ServiceBinary, which is rsndk.sys in the model's destination
/// (%13% the driver store from 25341, %12% System32\drivers before).
#[test]
fn one_service() {
    let mut service_sections = Vec::new();
    for (inf, file, flags) in [
        (protocol(), layout::PROTOCOL_INF.source, "0"),
        (miniport(), layout::MINIPORT_INF.source, "2"),
    ] {
        for (build, install) in installs(&inf, file) {
            let services = section(&inf, &format!("{install}.Services"), file);
            let adds: Vec<_> = services.entries("AddService").collect();
            assert_eq!(
                adds.len(),
                1,
                "{file}: [{install}.Services] adds {} services",
                adds.len()
            );
            assert_eq!(
                adds[0].value(0),
                layout::SERVICE,
                "{file}: [{install}.Services]"
            );
            assert_eq!(
                adds[0].value(1),
                flags,
                "{file}: [{install}.Services] flags"
            );
            let service = section(&inf, adds[0].value(2), file);
            let binary = if build >= 25341 {
                "%13%\\rsndk.sys"
            } else {
                "%12%\\rsndk.sys"
            };
            assert_eq!(
                service.get("ServiceBinary"),
                Some(binary),
                "{file}: [{}]",
                service.name
            );
            assert_eq!(
                service.get("ServiceType"),
                Some("1"),
                "{file}: kernel driver"
            );
            let mut rest: Vec<(String, String)> = service
                .lines
                .iter()
                .filter(|l| !l.is("ServiceBinary"))
                .map(|l| {
                    let key = l.key.clone().unwrap_or_default().to_ascii_lowercase();
                    (key, inf.resolve(&l.values.join(",")))
                })
                .collect();
            rest.sort();
            service_sections.push((format!("{file} [{}]", service.name), rest));
        }
        for install in installs(&inf, file).into_iter().map(|(_, i)| i) {
            let reg = ndi_values(&inf, &install, file, "Ndi", "Service");
            assert_eq!(
                reg,
                [layout::SERVICE],
                "{file}: Ndi\\Service of [{install}]"
            );
        }
    }
    for pair in service_sections.windows(2) {
        assert_eq!(
            pair[0].1, pair[1].1,
            "{} and {} differ",
            pair[0].0, pair[1].0
        );
    }
    let protocol_rs = read("src/driver/entry.rs");
    let registered = format!("ascii_to_utf16(b\"{}\")", layout::SERVICE);
    assert!(
        protocol_rs.contains(&registered),
        "src/driver/entry.rs must register the protocol as {registered}"
    );
}

/// The values (field 4 on) of every `HKR, <key>, <value>` line in the
/// AddReg sections `install` names.
fn ndi_values(inf: &Inf, install: &str, file: &str, key: &str, value: &str) -> Vec<String> {
    let ddinstall = section(inf, install, file);
    ddinstall
        .list("AddReg")
        .iter()
        .flat_map(|name| section(inf, name, file).lines.clone())
        .filter(|l| {
            l.value(0) == "HKR"
                && l.value(1).eq_ignore_ascii_case(key)
                && l.value(2).eq_ignore_ascii_case(value)
        })
        .map(|l| inf.resolve(l.value(4)))
        .collect()
}

/// Universal INF (WDD install/using-a-universal-inf-file.md), which
/// `infverif /w` enforces from the `/wbuild` build on
/// (devtest/running-infverif-from-the-command-line.md): none of the
/// sections and directives it lists as invalid (DelService among them,
/// which both INFs had), AddReg only under HKR, CopyFiles only to DIRIDs
/// 11, 12, 13, and 13 (the driver store) in the 25341 model; no `Include`
/// or `Needs`, which may only name system-supplied INFs
/// (install/inf-ddinstall-section.md) and which this package has no use
/// for.
#[test]
fn universal_and_declarative() {
    const INVALID_SECTIONS: [&str; 4] = [
        "ClassInstall32",
        ".CoInstallers",
        ".FactDef",
        ".LogConfigOverride",
    ];
    const INVALID_DIRECTIVES: [&str; 15] = [
        "BitReg",
        "DelFiles",
        "DelProperty",
        "DelReg",
        "DelService",
        "Ini2Reg",
        "LogConfig",
        "ProfileItems",
        "RegisterDlls",
        "RenFiles",
        "UnregisterDlls",
        "UpdateIniFields",
        "UpdateInis",
        "Include",
        "Needs",
    ];
    for (inf, file) in [
        (protocol(), layout::PROTOCOL_INF.source),
        (miniport(), layout::MINIPORT_INF.source),
    ] {
        for s in &inf.sections {
            for invalid in INVALID_SECTIONS {
                assert!(
                    !s.name
                        .to_ascii_lowercase()
                        .contains(&invalid.to_ascii_lowercase()),
                    "{file}: [{}] is not valid in a universal INF",
                    s.name
                );
            }
            assert!(
                !s.name.to_ascii_lowercase().ends_with(".remove.services"),
                "{file}: [{}] (DelService's section)",
                s.name
            );
            for l in &s.lines {
                for d in INVALID_DIRECTIVES {
                    assert!(!l.is(d), "{file}:{}: {d} in [{}]", l.number, s.name);
                }
            }
        }
        let destinations = section(&inf, "DestinationDirs", file);
        for (build, install) in installs(&inf, file) {
            let ddinstall = section(&inf, &install, file);
            for reg in ddinstall.list("AddReg") {
                for l in &section(&inf, reg, file).lines {
                    assert_eq!(l.value(0), "HKR", "{file}:{}: AddReg outside HKR", l.number);
                }
            }
            for copy in ddinstall.list("CopyFiles") {
                let dirid = destinations
                    .get(copy)
                    .unwrap_or_else(|| panic!("{file}: no DestinationDirs entry for {copy}"));
                let allowed: &[&str] = if build >= 25341 {
                    &["13"]
                } else {
                    &["11", "12", "13"]
                };
                assert!(
                    allowed.contains(&dirid),
                    "{file}: {copy} copies to DIRID {dirid} in the {build} model"
                );
            }
        }
    }
}

/// Every file the INFs copy is listed in `[SourceDisksFiles]`, every file
/// listed there is copied, and each is one the build produces
/// (layout::BINARIES: a cdylib of a cargo package of this repository, the
/// driver renamed to .sys) - inf2cat fails otherwise ("all files
/// referenced in the INF must be present", WDD devtest/inf2cat.md).
#[test]
fn every_file_is_built() {
    let mut named = BTreeSet::new();
    for (inf, file) in [
        (protocol(), layout::PROTOCOL_INF.source),
        (miniport(), layout::MINIPORT_INF.source),
    ] {
        let listed: BTreeSet<String> = section(&inf, "SourceDisksFiles", file)
            .lines
            .iter()
            .map(|l| l.key.clone().unwrap_or_else(|| l.value(0).to_owned()))
            .collect();
        let mut copied = BTreeSet::new();
        for (_, install) in installs(&inf, file) {
            for copy in section(&inf, &install, file).list("CopyFiles") {
                for l in &section(&inf, copy, file).lines {
                    copied.insert(l.value(0).to_owned());
                }
            }
        }
        assert_eq!(listed, copied, "{file}: SourceDisksFiles against CopyFiles");
        named.extend(copied);
    }
    let built: BTreeSet<String> = layout::BINARIES.iter().map(|b| b.file.to_owned()).collect();
    assert_eq!(
        named, built,
        "files the INFs name against files the package builds"
    );
    for binary in layout::BINARIES {
        let manifest = root().join(binary.manifest);
        let text = std::fs::read_to_string(&manifest).unwrap_or_else(|e| {
            panic!(
                "{} is built by package {} ({}), which is missing: {e}",
                binary.file,
                binary.package,
                manifest.display()
            )
        });
        let package = text.split("[package]").nth(1).unwrap_or_default();
        assert!(
            package.contains(&format!("name = \"{}\"", binary.package)),
            "{}: package {}",
            binary.manifest,
            binary.package
        );
        assert!(
            text.contains("\"cdylib\""),
            "{}: builds no cdylib",
            binary.manifest
        );
        let stem = binary.linked.trim_end_matches(".dll");
        assert_eq!(
            stem.replace('-', "_"),
            binary.package.replace('-', "_"),
            "{}",
            binary.manifest
        );
    }
}

/// The notify object (WDD network/installation-requirements-for-network-
/// mux-intermediate-drivers.md, "Notify object"; muxp.inf): the protocol's
/// `Ndi\ClsID` is the class rsndknotify.dll serves
/// (rsndknotify::CLSID_RSNDK_NOTIFY), `Ndi\ComponentDll` that DLL; the
/// protocol stages the miniport's INF with CopyInf, from which the notify
/// object installs V.
#[test]
fn notify_object() {
    let inf = protocol();
    let file = layout::PROTOCOL_INF.source;
    for (_, install) in installs(&inf, file) {
        let clsid = ndi_values(&inf, &install, file, "Ndi", "ClsID");
        assert_eq!(clsid.len(), 1, "{file}: [{install}] ClsID");
        let parsed = rsndknotify::Guid::parse_braced(&clsid[0])
            .unwrap_or_else(|| panic!("{file}: ClsID {} is no braced GUID", clsid[0]));
        assert_eq!(
            parsed,
            rsndknotify::CLSID_RSNDK_NOTIFY,
            "{file}: ClsID against the DLL's class"
        );
        assert_eq!(
            ndi_values(&inf, &install, file, "Ndi", "ComponentDll"),
            [layout::NOTIFY.file],
            "{file}: [{install}] ComponentDll"
        );
        assert_eq!(
            section(&inf, &install, file).get("CopyInf"),
            Some(layout::MINIPORT_INF.stamped),
            "{file}: [{install}] CopyInf"
        );
    }
}

/// Characteristics and the NDIS interface keywords. The protocol: 0x80
/// NCF_HAS_UI, required for a MUX protocol's property pages (netcfgx.h;
/// muxp.inf). The miniport: 0xA1 = NCF_VIRTUAL (required for a MUX
/// device) | NCF_NOT_USER_REMOVABLE | NCF_HAS_UI (mux_mp.inf), and the
/// keywords NDIS 6 requires of a connectionless miniport's INF or does not
/// call MiniportInitializeEx ("Updating the MiniportInitialize Function
/// for NDIS 6.0"; network/keywords-not-displayed-in-the-user-interface.md):
/// *IfType 6 (IF_TYPE_ETHERNET_CSMACD), *MediaType 0 (NdisMedium802_3),
/// *PhysicalMediaType 14 (NdisPhysicalMedium802_3), which the driver's
/// general attributes match (the bottle's lifecycle test: media 802.3).
/// Interfaces: the protocol `noupper`/`ndis5`, the miniport `ndis5` above
/// (INF Requirements for NDKPI: "ndis5" so that Windows components discover
/// the NDK-capable adapter) and `nolower` below.
#[test]
fn characteristics_and_interface_keywords() {
    let inf = protocol();
    let file = layout::PROTOCOL_INF.source;
    for (_, install) in installs(&inf, file) {
        assert_eq!(
            section(&inf, &install, file).get("Characteristics"),
            Some("0x80")
        );
        assert_eq!(
            ndi_values(&inf, &install, file, "Ndi\\Interfaces", "UpperRange"),
            ["noupper"]
        );
        assert_eq!(
            ndi_values(&inf, &install, file, "Ndi\\Interfaces", "LowerRange"),
            ["ndis5"]
        );
    }
    let inf = miniport();
    let file = layout::MINIPORT_INF.source;
    for (_, install) in installs(&inf, file) {
        let s = section(&inf, &install, file);
        assert_eq!(s.get("Characteristics"), Some("0xA1"), "[{install}]");
        assert_eq!(s.get("*IfType"), Some("6"), "[{install}]");
        assert_eq!(s.get("*MediaType"), Some("0"), "[{install}]");
        assert_eq!(s.get("*PhysicalMediaType"), Some("14"), "[{install}]");
        assert_eq!(
            ndi_values(&inf, &install, file, "Ndi\\Interfaces", "UpperRange"),
            ["ndis5"]
        );
        assert_eq!(
            ndi_values(&inf, &install, file, "Ndi\\Interfaces", "LowerRange"),
            ["nolower"]
        );
    }
}

/// The NDK keywords of every miniport model, as "INF Requirements for
/// NDKPI" (WDD network/inf-requirements-for-ndkpi.md) gives them:
/// *NetworkDirect an enum, default 1 (enabled), values 0 and 1;
/// *NetworkDirectTechnology an enum whose values are NDK_RDMA_TECHNOLOGY
/// identifiers (1 iWARP, 2 InfiniBand, 3 RoCE, 4 RoCEv2; never redefined),
/// listing only the transports the device supports - rsndk's RNIC speaks
/// RoCEv2 only - with the default among them; *NetworkDirectRoCEFrameSize
/// (required for RoCE and RoCEv2) an enum of 256-4096 with default 1024.
#[test]
fn ndk_keywords() {
    let inf = miniport();
    let file = layout::MINIPORT_INF.source;
    for (_, install) in installs(&inf, file) {
        let param = |keyword: &str, value: &str| {
            ndi_values(
                &inf,
                &install,
                file,
                &format!("Ndi\\Params\\{keyword}"),
                value,
            )
        };
        let choices = |keyword: &str| -> Vec<String> {
            let key = format!("Ndi\\Params\\{keyword}\\enum");
            section(&inf, &install, file)
                .list("AddReg")
                .iter()
                .flat_map(|name| section(&inf, name, file).lines.clone())
                .filter(|l| l.value(0) == "HKR" && l.value(1).eq_ignore_ascii_case(&key))
                .map(|l| l.value(2).to_owned())
                .collect()
        };
        assert_eq!(param("*NetworkDirect", "Type"), ["enum"], "[{install}]");
        assert_eq!(param("*NetworkDirect", "Default"), ["1"], "[{install}]");
        assert_eq!(choices("*NetworkDirect"), ["0", "1"], "[{install}]");
        assert_eq!(
            param("*NetworkDirect", "ParamDesc"),
            ["NetworkDirect Functionality"]
        );

        assert_eq!(
            param("*NetworkDirectTechnology", "Type"),
            ["enum"],
            "[{install}]"
        );
        assert_eq!(
            choices("*NetworkDirectTechnology"),
            ["4"],
            "RoCEv2 only, NdkRoCEv2 = 4"
        );
        assert_eq!(
            param("*NetworkDirectTechnology", "Default"),
            ["4"],
            "[{install}]"
        );
        assert_eq!(ndkpi::NdkRoCEv2, 4, "NDK_RDMA_TECHNOLOGY's RoCEv2");

        assert_eq!(
            param("*NetworkDirectRoCEFrameSize", "Type"),
            ["enum"],
            "[{install}]"
        );
        assert_eq!(
            param("*NetworkDirectRoCEFrameSize", "Default"),
            ["1024"],
            "[{install}]"
        );
        assert_eq!(
            choices("*NetworkDirectRoCEFrameSize"),
            ["256", "512", "1024", "2048", "4096"],
            "[{install}]"
        );
    }
}

/// What the package ships: each INF stamped as stampinf would
/// (rsndk_package::stamp), still an INF, `$ARCH$` gone (the models read
/// `NTamd64`), DriverVer `mm/dd/yyyy,w.x.y.z` (WDD
/// install/inf-driverver-directive.md), the catalog named.
#[test]
fn stamped_infs() {
    let stamp = rsndk_package::stamp::Stamp::from_unix_millis(1_790_000_000_123);
    for inf in [layout::PROTOCOL_INF, layout::MINIPORT_INF] {
        let text =
            rsndk_package::stamp::stamp(&read(inf.source), layout::ARCH, layout::CATALOG, &stamp)
                .unwrap_or_else(|e| panic!("{}: {e}", inf.source));
        assert!(!text.contains("$ARCH$"), "{}", inf.stamped);
        let parsed = Inf::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", inf.stamped));
        let version = section(&parsed, "Version", inf.stamped);
        let driver_ver = version.entries("DriverVer").next().expect("DriverVer");
        let (date, number) = (driver_ver.value(0), driver_ver.value(1));
        let date: Vec<u32> = date.split('/').map(|p| p.parse().unwrap()).collect();
        assert_eq!(date, [9, 21, 2026], "{}", inf.stamped);
        let parts: Vec<u32> = number.split('.').map(|p| p.parse().unwrap()).collect();
        assert_eq!(parts.len(), 4, "{}: {number}", inf.stamped);
        assert_eq!(version.get("CatalogFile"), Some(layout::CATALOG));
        for m in models(&parsed, inf.stamped) {
            assert_eq!(m.decoration.architecture, layout::ARCH, "{}", inf.stamped);
        }
    }
}

/// Windows versions inf2cat's `/os:` names, with the build each is
/// (WDD devtest/inf2cat.md's table; builds from the release pages).
const INF2CAT_OS: [(&str, u32); 7] = [
    ("10_X64", 10240),
    ("10_VB_X64", 19041),
    ("ServerFE_X64", 20348),
    ("10_CO_X64", 22000),
    ("10_NI_X64", 22621),
    ("10_GE_X64", 26100),
    ("Server2025_X64", 26100),
];

/// The model Windows picks on `build`: the highest decoration the build
/// reaches (WDD install/inf-manufacturer-section.md), if any.
fn model_for(builds: &[u32], build: u32) -> Option<u32> {
    builds.iter().copied().filter(|&b| b <= build).max()
}

/// The packaging tools' arguments (Makefile.toml) against the models.
/// InfVerif: Windows Driver mode (/w) over both INFs, enforced from the
/// newest model's build on with `/wbuild NTAMD64.10.0.0.<build>` (WDD
/// develop/validating-windows-drivers.md; the usage text of
/// devtest/running-infverif-from-the-command-line.md writes
/// <Major.Minor.Build>, default 10.0.17763: which form InfVerif takes is
/// for a Windows run to show). inf2cat: every `/os` entry is a known
/// version that selects one of the models, and every model is selected by
/// one entry (WDD devtest/inf2cat.md: the catalog is made for the listed
/// versions; `/os:10_x64`, wdk-build's default, reaches no model).
#[test]
fn infverif_and_inf2cat_arguments() {
    let makefile = read("Makefile.toml");
    let (p, m) = (protocol(), miniport());
    let newest = newest_build(&p, layout::PROTOCOL_INF.source);
    assert_eq!(newest, newest_build(&m, layout::MINIPORT_INF.source));

    let args = task_args(&makefile, "infverif").unwrap();
    assert!(args.iter().any(|a| a == "/w"), "infverif {args:?}");
    let wbuild = args
        .iter()
        .position(|a| a == "/wbuild")
        .map(|i| args[i + 1].clone())
        .expect("infverif /wbuild");
    assert_eq!(wbuild, format!("NTAMD64.10.0.0.{newest}"));
    for inf in [layout::PROTOCOL_INF, layout::MINIPORT_INF] {
        assert!(
            args.iter()
                .any(|a| a.ends_with(&format!("/{}", inf.stamped))),
            "infverif {args:?}"
        );
    }

    let args = task_args(&makefile, "inf2cat").unwrap();
    let os = args
        .iter()
        .find_map(|a| a.strip_prefix("/os:"))
        .expect("inf2cat /os:");
    let builds: Vec<u32> = models(&p, layout::PROTOCOL_INF.source)
        .iter()
        .filter_map(|m| m.decoration.build)
        .collect();
    let mut selected = BTreeSet::new();
    for name in os.split(',') {
        let Some(&(_, build)) = INF2CAT_OS
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
        else {
            panic!("inf2cat /os:{name} is not a version this test knows");
        };
        let model = model_for(&builds, build).unwrap_or_else(|| {
            panic!("inf2cat /os:{name} (build {build}) selects no model of {builds:?}")
        });
        selected.insert(model);
    }
    assert_eq!(
        selected,
        builds.iter().copied().collect(),
        "every model must be catalogued for one /os entry"
    );
    assert!(
        makefile.contains("dependencies = [\"copy-driver-binary-to-package\", \"copy-inf-to-package\", \"copy-notify-to-package\"]"),
        "inf2cat runs after the notify DLL is in the package"
    );
}

/// The Windows workflow: every action pinned by a full commit SHA (GitHub's
/// "Security hardening for GitHub Actions": the only immutable reference),
/// and a WDK that knows Windows Server 2025 (10.0.26100 or later: inf2cat's
/// Server2025_X64).
#[test]
fn windows_workflow() {
    let workflow = read(".github/workflows/windows.yml");
    let mut pinned = 0;
    for line in workflow.lines() {
        let Some(uses) = line.trim().trim_start_matches("- ").strip_prefix("uses:") else {
            continue;
        };
        let uses = uses.trim();
        if uses.starts_with("./") {
            continue;
        }
        let sha = uses
            .split_once('@')
            .map_or("", |(_, r)| r.split_whitespace().next().unwrap_or(""));
        assert!(
            sha.len() == 40 && sha.bytes().all(|b| b.is_ascii_hexdigit()),
            "{uses}: not pinned by a commit SHA"
        );
        pinned += 1;
    }
    assert!(pinned > 0, "the workflow uses no action");
    for line in workflow.lines().filter(|l| l.contains("ref:")) {
        let r = line.split("ref:").nth(1).unwrap_or_default().trim();
        assert!(
            r.len() == 40 && r.bytes().all(|b| b.is_ascii_hexdigit()),
            "checkout ref {r}: not a SHA"
        );
    }
    let wdk = workflow
        .lines()
        .find_map(|l| l.trim().strip_prefix("WDK_VERSION:"))
        .map(str::trim)
        .expect("WDK_VERSION in the workflow's env");
    let build: u32 = wdk
        .trim_matches('"')
        .split('.')
        .nth(2)
        .and_then(|b| b.parse().ok())
        .unwrap_or_else(|| panic!("WDK_VERSION {wdk}"));
    assert!(build >= 26100, "WDK {wdk} predates Windows Server 2025");
}
