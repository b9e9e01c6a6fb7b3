//! What the class style's generated code calls: the check that the `policies = field` field
//! holds the struct generated for its impl block.

/// Implemented only by `P` itself, so a `policies` field of another type is one coded error on
/// the field's name in `#[resilient(policies = …)]`.
#[diagnostic::on_unimplemented(
    message = "[R4C-CLS-005] the `policies` field holds a `{Self}`, not the `{P}` generated for this impl block",
    label = "this field must be of type `{P}`",
    note = "declare the field as `{P}` and build it with `{P}::new(&registry)`"
)]
pub trait PoliciesField<P> {
    /// The field, as the generated struct.
    fn policies(&self) -> &P;
}

impl<P> PoliciesField<P> for P {
    #[inline(always)]
    fn policies(&self) -> &P {
        self
    }
}

/// `&self.<field>` as `&<Type>Policies`, or `[R4C-CLS-005]`.
#[inline(always)]
pub fn policies_field<P, F: PoliciesField<P>>(field: &F) -> &P {
    field.policies()
}
