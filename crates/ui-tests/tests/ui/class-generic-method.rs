use resilience4cata::resilient;

pub struct Client;

#[resilient(policies = policies)]
impl Client {
    #[retry]
    pub fn get<S: AsRef<str>>(&self, path: S) -> Result<usize, String> {
        Ok(path.as_ref().len())
    }
}

fn main() {}
