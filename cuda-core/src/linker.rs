//! Linking object code into one cubin.

use std::ffi::CString;

use crate::device::Device;
use crate::driver::{jit_link, JitInput, LinkInput};
use crate::error::{Error, Result};
use crate::object_code::{CodeType, ObjectCode};

/// Which linker a [`Linker`] uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LinkerBackend {
    /// nvJitLink when it is found, else the driver's linker.
    #[default]
    Auto,
    /// nvJitLink only; an error when it is not found.
    NvJitLink,
    /// The driver's `cuLink*` only (no LTO-IR).
    Driver,
}

/// Options of a [`Linker`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinkerOptions {
    /// The device to link for: its architecture is the target, and its primary context hosts
    /// the driver's linker. `None` for the current device.
    pub device: Option<Device>,
    /// The target architecture as in `sm_90` without `sm_`; `None` for the device's.
    pub arch: Option<String>,
    /// Which linker.
    pub backend: LinkerBackend,
    /// More nvJitLink options, passed as they are (`-O3`, `-lineinfo`, ...).
    pub extra: Vec<String>,
}

crate::options::chainers!(LinkerOptions {
    with_device(device: Device) => some;
    with_arch(arch: impl Into<String>) => some;
    with_backend(backend: LinkerBackend);
    with_extra(extra: Vec<String>);
});

/// Links PTX, cubin, fatbin and LTO-IR inputs (compiled with relocatable device code) into one
/// cubin: through nvJitLink when it is found (discovered like NVRTC: `CUDA_CORE_NVJITLINK_PATH`,
/// the loader, the toolkit, the `nvidia-nvjitlink` wheels), else through the driver's linker
/// (`cuLinkCreate`, `cuLinkAddData`, `cuLinkComplete`), which cannot take LTO-IR: that is
/// [`Error::Link`] saying so. With LTO-IR inputs, nvJitLink links with `-lto`.
///
/// ```no_run
/// use cuda_core::{CodeType, Linker, LinkerOptions, Program, ProgramOptions};
///
/// let rdc = ProgramOptions { relocatable_device_code: true, ..Default::default() };
/// let lib = Program::new("__device__ float twice(float x) { return 2 * x; }", rdc.clone())
///     .compile(CodeType::Ptx, &[])?;
/// let main = Program::new(
///     r#"__device__ float twice(float);
///        extern "C" __global__ void k(float* x) { x[0] = twice(x[0]); }"#,
///     rdc,
/// )
/// .compile(CodeType::Ptx, &[])?;
/// let linked = Linker::new(&[lib, main], LinkerOptions::default()).link()?;
/// let kernel = linked.get_kernel("k")?;
/// # Ok::<(), cuda_core::Error>(())
/// ```
#[doc(alias("nvJitLinkHandle", "CUlinkState"))]
#[derive(Clone, Debug)]
pub struct Linker {
    inputs: Vec<ObjectCode>,
    options: LinkerOptions,
}

impl Linker {
    /// A linker of these inputs.
    #[must_use]
    pub fn new(inputs: &[ObjectCode], options: LinkerOptions) -> Linker {
        Linker {
            inputs: inputs.to_vec(),
            options,
        }
    }

    /// Links the inputs into a cubin; the linker's info log is the result's
    /// [`ObjectCode::compile_log`]. A failure is [`Error::Link`] with the linker's error log.
    #[doc(alias("nvJitLinkCreate", "cuLinkCreate"))]
    pub fn link(&self) -> Result<ObjectCode> {
        if self.inputs.is_empty() {
            return Err(Error::InvalidArgument {
                name: "inputs",
                reason: "nothing to link".to_owned(),
            });
        }
        let device = || match self.options.device {
            Some(device) => Ok(device),
            None => Device::current(),
        };
        if self.options.backend != LinkerBackend::Driver {
            let arch = match &self.options.arch {
                Some(arch) => arch.clone(),
                None => device()?.arch()?,
            };
            if let Some(linked) = self.link_with_nvjitlink(&arch)? {
                return Ok(linked);
            }
            if self.options.backend == LinkerBackend::NvJitLink {
                return Err(Error::Link {
                    log: format!(
                        "nvJitLink was not found: {}",
                        crate::driver::nvjitlink_info().err().unwrap_or_default()
                    ),
                });
            }
        }
        let names: Vec<CString> = self
            .inputs
            .iter()
            .map(|o| CString::new(o.name().replace('\0', "")).unwrap_or_default())
            .collect();
        let mut inputs = Vec::with_capacity(self.inputs.len());
        for (object, name) in self.inputs.iter().zip(&names) {
            let kind = match object.code_type() {
                CodeType::Cubin => 0,
                CodeType::Ptx => 1,
                CodeType::Fatbin => 2,
                CodeType::LtoIr => {
                    return Err(Error::Link {
                        log: format!(
                            "{} is LTO-IR: the driver's linker cannot take it, and linking LTO-IR \
                             needs nvJitLink, which was not found ({})",
                            object.name(),
                            crate::driver::nvjitlink_info().err().unwrap_or_default()
                        ),
                    })
                }
            };
            inputs.push(LinkInput {
                kind,
                data: object.code(),
                name,
            });
        }
        let (cubin, log) = device()?
            .primary_context()?
            .with_current(|driver| driver.link(&inputs))?;
        let name = format!("linked({})", self.inputs.len());
        Ok(ObjectCode::from_compiled(
            CodeType::Cubin,
            cubin,
            name,
            log,
            Vec::new(),
        ))
    }

    /// Links with nvJitLink; `None` when there is none.
    fn link_with_nvjitlink(&self, arch: &str) -> Result<Option<ObjectCode>> {
        let lto = self.inputs.iter().any(|o| o.code_type() == CodeType::LtoIr);
        let mut options = vec![format!("-arch=sm_{arch}")];
        if lto {
            options.push("-lto".to_owned());
        }
        options.extend(self.options.extra.iter().cloned());
        let inputs: Vec<JitInput<'_>> = self
            .inputs
            .iter()
            .map(|o| JitInput {
                kind: match o.code_type() {
                    CodeType::Cubin => 1,
                    CodeType::Ptx => 2,
                    CodeType::LtoIr => 3,
                    CodeType::Fatbin => 4,
                },
                data: o.code(),
                name: o.name(),
            })
            .collect();
        let Some((cubin, log)) = jit_link(&inputs, &options)? else {
            return Ok(None);
        };
        let name = format!("linked({})", self.inputs.len());
        Ok(Some(ObjectCode::from_compiled(
            CodeType::Cubin,
            cubin,
            name,
            log,
            Vec::new(),
        )))
    }
}
