//! Linking object code into one cubin.

use std::ffi::CString;

use crate::device::Device;
use crate::driver::LinkInput;
use crate::error::{Error, Result};
use crate::object_code::{CodeType, ObjectCode};

/// Options of a [`Linker`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinkerOptions {
    /// The device to link for (its primary context hosts the driver's linker); `None` for the
    /// current device.
    pub device: Option<Device>,
}

/// Links PTX, cubin and fatbin inputs (compiled with relocatable device code) into one cubin,
/// through the driver's linker (`cuLinkCreate`, `cuLinkAddData`, `cuLinkComplete`). The
/// driver's linker cannot take LTO-IR: that is [`Error::Link`] saying so.
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
#[derive(Clone, Debug)]
pub struct Linker {
    inputs: Vec<ObjectCode>,
    options: LinkerOptions,
}

impl Linker {
    /// A linker of these inputs.
    pub fn new(inputs: &[ObjectCode], options: LinkerOptions) -> Linker {
        Linker {
            inputs: inputs.to_vec(),
            options,
        }
    }

    /// Links the inputs into a cubin; the linker's info log is the result's
    /// [`ObjectCode::compile_log`]. A failure is [`Error::Link`] with the linker's error log.
    pub fn link(&self) -> Result<ObjectCode> {
        if self.inputs.is_empty() {
            return Err(Error::InvalidArgument {
                name: "inputs",
                reason: "nothing to link".to_owned(),
            });
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
                             needs nvJitLink",
                            object.name()
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
        let device = match self.options.device {
            Some(device) => device,
            None => Device::current()?,
        };
        let (cubin, log) = device
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
}
