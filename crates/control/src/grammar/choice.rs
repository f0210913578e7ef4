//! `choice!`: a field that takes one of a few words (`driver: af_packet`). Read from a string
//! only, so that no other form of the value (serde's `{af_packet: null}` for an enum) slips in;
//! an unknown word is refused listing the words.

macro_rules! choice {
    ($(#[$m:meta])* $name:ident { $($variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
        pub enum $name {
            $(#[serde(rename = $text)] $variant),+
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                const WORDS: &[&str] = &[$($text),+];
                match String::deserialize(d)?.as_str() {
                    $($text => Ok($name::$variant),)+
                    other => Err(serde::de::Error::unknown_variant(other, WORDS)),
                }
            }
        }

        impl $name {
            /// The word that names it.
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
        }
    };
}
