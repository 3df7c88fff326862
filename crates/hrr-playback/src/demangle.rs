//! Kernel names as a person reads them: Itanium C++ names (`_Z10gather_badPKfPKiPfi`)
//! demangled (`gather_bad(float const*, int const*, float*, int)`); anything else as it is.
//! `--json` keeps the mangled name beside the demangled one.

/// The demangled form of `name`, or `name` itself when it is not a mangled C++ name.
pub fn demangle(name: &str) -> String {
    if !name.starts_with("_Z") {
        return name.to_string();
    }
    cpp_demangle::Symbol::new(name)
        .ok()
        .and_then(|s| s.demangle().ok())
        .unwrap_or_else(|| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::demangle;

    #[test]
    fn mangled_kernel_names_read_as_c_plus_plus() {
        assert_eq!(
            demangle("_Z10gather_badPKfPKiPfi"),
            "gather_bad(float const*, int const*, float*, int)"
        );
        assert_eq!(demangle("axpy"), "axpy");
        assert_eq!(demangle("_Znot valid"), "_Znot valid");
    }
}
