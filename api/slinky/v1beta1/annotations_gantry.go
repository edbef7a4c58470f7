package v1beta1

// Annotations on Controllers that Gantry reads and the Slinky operator does
// not know.
const (
	// AnnotationGenerateAuthKeys, when "true", makes Gantry create each
	// Secret named by spec.slurmKeyRef and the auth/jwt key reference
	// (jwtKeyRef, else jwtHs256KeyRef) that does not exist yet, holding
	// random key material under the referenced key, as Slinky's Helm chart
	// does on install. The generated Secret is controlled by the Controller
	// and goes with it. An existing Secret is never modified, even when it
	// lacks the referenced key. Ignored for an external slurmctld.
	AnnotationGenerateAuthKeys = "gantry.dev/generate-auth-keys"

	// AnnotationSlurmWithoutRestApi, when "true", says that the Controller
	// runs without a RestApi on purpose. Once a Controller's NodeSets have
	// seen a RestApi, its removal (a Helm rename, a GitOps replace) leaves
	// Slurm's state unknown, not empty: Gantry deletes no pod that may run
	// jobs until a RestApi answers again. This annotation opts out: its
	// NodeSets go back to upstream's rule, under which every Slurm node
	// counts as drained and pods follow Kubernetes alone.
	AnnotationSlurmWithoutRestApi = "gantry.dev/slurm-without-restapi"
)

// Annotations on RestApis.
const (
	// AnnotationSlurmrestdURL is the slurmrestd URL the manager uses instead
	// of the RestApi's Service (http://<name>-restapi.<namespace>.svc:6820),
	// for a manager running outside the cluster. It is honoured only when
	// the manager runs with --feature-gates=SlurmrestdURLOverride=true.
	AnnotationSlurmrestdURL = "gantry.dev/slurmrestd-url"
)
