//! The policy registry as a crate outside vcpusim uses it (`vcpusim::policy`): registering a
//! policy, resolving a family of names, and the clashes refused. Its own process: the registry
//! is global, so these registrations stay out of the unit tests that list it.

use vcpusim::policy::{
    find, find_any, register, register_resolver, registry_names, HostShape, ParamSpec, Params, Policy, PolicyKind, Resolver,
};

/// A kind that builds nothing runnable: only its name matters to the registry's tests.
struct Named(&'static str);

impl PolicyKind for Named {
    fn name(&self) -> &'static str {
        self.0
    }
    fn describe(&self) -> &'static str {
        "a registry test"
    }
    fn params(&self) -> Vec<ParamSpec> {
        Vec::new()
    }
    fn build(&self, _params: &Params, _host: HostShape) -> Box<dyn Policy> {
        find_any("native").expect("built in").build(&Params::defaults(&[]), HostShape::new(1, 1, 1))
    }
}

#[test]
fn registered_policies_are_found_listed_and_guarded_against_clashes() {
    static MINE: Named = Named("registry-test-mine");
    register(&MINE).expect("a new name");
    register(&MINE).expect("the same kind again is harmless");
    assert_eq!(find("registry-test-mine").map(|k| k.describe()), Ok("a registry test"));
    assert!(registry_names().contains(&"registry-test-mine".to_string()), "listed after the built-ins");
    assert_eq!(&registry_names()[..6], &["cfs", "credit", "credit2", "eevdf", "gang", "hybrid"], "built-ins first, in order");
    static CLASH: Named = Named("registry-test-mine");
    assert!(register(&CLASH).unwrap_err().contains("registered already"));
    static NATIVE: Named = Named("native");
    assert!(register(&NATIVE).unwrap_err().contains("bare-metal"));
    for bad in ["", "has space", "python:x:Y"] {
        let kind: &'static Named = Box::leak(Box::new(Named(bad)));
        assert!(register(kind).unwrap_err().contains("use letters"), "{bad:?}");
    }
}

#[test]
fn a_resolver_answers_the_names_of_its_prefix_and_is_listed_in_the_error() {
    static RESOLVED: Named = Named("resolver-test:thing");
    fn resolve(name: &str) -> Result<&'static dyn PolicyKind, String> {
        if name == "resolver-test:thing" {
            Ok(&RESOLVED)
        } else {
            Err("no such thing".to_string())
        }
    }
    register_resolver(Resolver { prefix: "resolver-test:", form: "resolver-test:<thing>", resolve });
    assert_eq!(find("resolver-test:thing").map(|k| k.name()), Ok("resolver-test:thing"));
    assert_eq!(find("resolver-test:other").err().as_deref(), Some("policy \"resolver-test:other\": no such thing"));
    let unknown = find("nonesuch").err().expect("no such policy");
    assert!(unknown.starts_with("unknown policy \"nonesuch\"; expected one of: cfs, credit,"), "{unknown}");
    assert!(unknown.contains("resolver-test:<thing>"), "{unknown}");
}
