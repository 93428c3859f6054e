//! The one style of every options struct: public fields, `Default`, and a `with_*` chainer
//! per field, so that `StreamOptions::default().with_priority(-1)` and the struct literal
//! `StreamOptions { priority: Some(-1), ..Default::default() }` say the same.

/// Writes an options struct's chainers: `name(field: Type)` sets the field to the value;
/// `name(field: Type) => some` sets an `Option` field to `Some(value.into())`.
macro_rules! chainers {
    ($ty:ty { $($method:ident($field:ident: $arg:ty) $(=> $wrap:ident)?;)* }) => {
        impl $ty {
            $(
                #[doc = concat!("Sets [`", stringify!($field), "`](Self::", stringify!($field), ").")]
                #[must_use]
                #[inline]
                pub fn $method(mut self, value: $arg) -> Self {
                    self.$field = $crate::options::chainers!(@wrap value $($wrap)?);
                    self
                }
            )*
        }
    };
    (@wrap $value:ident) => { $value };
    (@wrap $value:ident some) => { Some($value.into()) };
}
pub(crate) use chainers;

/// A flag's argument, where it is set: for a table row of [`options_table!`].
pub(crate) fn on(set: bool, arg: &str) -> Option<String> {
    set.then(|| arg.to_owned())
}

/// Writes an options struct whose fields are a tool's command-line options
/// ([`ProgramOptions`](crate::ProgramOptions) for NVRTC, [`LinkerOptions`](crate::LinkerOptions)
/// for nvJitLink) from one table, in which each option is one row:
///
/// ```text
/// /// rustdoc of the field
/// field: FieldType, with_field(ChainerArg) [=> some],
///     |value, target| arguments [, since (major, minor)] [, for [Taker, ...]];
/// ```
///
/// - `field: FieldType` is the public field, in the struct's order, with its rustdoc.
/// - `with_field(ChainerArg) [=> some]` is its chainer, as [`chainers!`] writes it.
/// - `|value, target| arguments` makes its arguments: `value` is `&self.field`, `target` the
///   [`CodeType`](crate::CodeType) (`_` where unused), and `arguments` any `IntoIterator` of
///   `String` (`on(*value, "-flag")` for a `bool` flag, `None::<String>` for a field that makes
///   none). The arguments function gives every row's arguments in the order of the rows, so
///   a new option is one row; where the tool reads two options in turn (a later one undoing an
///   earlier one), their rows keep that order, and say so.
/// - `since (major, minor)`, where given, is the first NVRTC that takes the option:
///   `check_nvrtc` refuses it on an older one where it makes any argument.
/// - `for [Taker, ...]`, where given, names the lists of fields that take the option besides
///   the tool (each a variant of the table's `Taker` enum): `taken_by` gives a list's fields in
///   the order of the rows.
///
/// After the struct, the table says what else to write:
///
/// ```text
/// /// rustdoc of the arguments function
/// [pub] fn to_args(&self, target: CodeType) -> Vec<String>;
/// [with check_nvrtc, set_fields, taken_by(Taker);]
/// ```
///
/// Generated: the struct, its chainers and the arguments function under the name and
/// visibility given; with the `with` line, `check_nvrtc`, `set_fields` (every field set to
/// other than its default, by name) and `taken_by`. Without it, a row may not have `since` or
/// `for`.
macro_rules! options_table {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $(
                $(#[$doc:meta])*
                $field:ident: $ty:ty, $method:ident($arg:ty) $(=> $wrap:ident)?,
                    |$value:tt, $target:tt| $args:expr
                    $(, since ($major:literal, $minor:literal))?
                    $(, for [$($taker:ident),+])?;
            )*
        }
        $(#[$args_doc:meta])*
        $args_vis:vis fn $args_fn:ident(&self, target: CodeType) -> Vec<String>;
        $(with check_nvrtc, set_fields, taken_by($takers:ident);)?
    ) => {
        $(#[$meta])*
        pub struct $name {
            $(
                $(#[$doc])*
                pub $field: $ty,
            )*
        }

        $crate::options::chainers!($name {
            $($method($field: $arg) $(=> $wrap)?;)*
        });

        impl $name {
            $(#[$args_doc])*
            $args_vis fn $args_fn(&self, target: $crate::object_code::CodeType) -> Vec<String> {
                let mut args: Vec<String> = Vec::new();
                $({
                    let $value = &self.$field;
                    let $target = target;
                    args.extend($args);
                })*
                args
            }

            $crate::options::options_table!(@with [$($takers)?] {
                $(
                    $field [$($major, $minor)?] [$($($taker),+)?]
                        |$value, $target| $args;
                )*
            });
        }
    };
    // No `with` line: no row has `since` or `for`.
    (@with [] {
        $($field:ident [] [] |$value:tt, $target:tt| $args:expr;)*
    }) => {};
    (@with [$takers:ident] {
        $(
            $field:ident [$($major:literal, $minor:literal)?] [$($taker:ident),*]
                |$value:tt, $target:tt| $args:expr;
        )*
    }) => {
        /// Refuses the options the NVRTC `major.minor` lacks, naming the versions that
        /// have them.
        pub(crate) fn check_nvrtc(&self, major: i32, minor: i32) -> $crate::error::Result<()> {
            $($(
                let since: (i32, i32) = ($major, $minor);
                let args: Vec<String> = {
                    let $value = &self.$field;
                    let $target = $crate::object_code::CodeType::Cubin;
                    $args.into_iter().collect()
                };
                if let Some(option) = args.first() {
                    if (major, minor) < since {
                        return Err($crate::error::Error::InvalidArgument {
                            name: "options",
                            reason: format!(
                                "{} ({option}) needs NVRTC {}.{} or newer; this is NVRTC \
                                 {major}.{minor}",
                                stringify!($field),
                                since.0,
                                since.1,
                            ),
                        });
                    }
                }
            )?)*
            Ok(())
        }

        /// Every field set to other than its default, by name.
        pub(super) fn set_fields(&self) -> Vec<&'static str> {
            let default = Self::default();
            let mut set = Vec::new();
            $(
                if self.$field != default.$field {
                    set.push(stringify!($field));
                }
            )*
            set
        }

        /// The fields that `taker` takes, in the order of the rows.
        pub(super) fn taken_by(taker: $takers) -> Vec<&'static str> {
            let mut fields = Vec::new();
            $($(
                if taker == $takers::$taker {
                    fields.push(stringify!($field));
                }
            )*)*
            fields
        }
    };
}
pub(crate) use options_table;
