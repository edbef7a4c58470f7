package webhook

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	slinkyv1beta1 "github.com/gantry-dev/gantry/api/slinky/v1beta1"
	"github.com/gantry-dev/gantry/pkg/controller/slurm/extraconf"
)

// +kubebuilder:webhook:path=/validate-slinky-slurm-net-v1beta1-controller,mutating=false,failurePolicy=fail,sideEffects=None,groups=slinky.slurm.net,resources=controllers,verbs=create;update,versions=v1beta1,name=vcontroller.slinky.slurm.net,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-slinky-slurm-net-v1beta1-nodeset,mutating=false,failurePolicy=fail,sideEffects=None,groups=slinky.slurm.net,resources=nodesets,verbs=create;update,versions=v1beta1,name=vnodeset.slinky.slurm.net,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-slinky-slurm-net-v1beta1-restapi,mutating=false,failurePolicy=fail,sideEffects=None,groups=slinky.slurm.net,resources=restapis,verbs=create;update,versions=v1beta1,name=vrestapi.slinky.slurm.net,admissionReviewVersions=v1

// The rules follow Slinky slurm-operator v1.2's webhooks (internal/webhook)
// and name the field of each failure. Referenced Secrets need not exist at
// admission; the controllers report missing ones in their Ready condition.

const (
	// maxClusterNameLength is Slurm's limit on ClusterName.
	maxClusterNameLength = 40
	// Service warnings guard against CVE-2020-8554 (traffic interception).
	externalIPsWarning = "ExternalIPs may not be set for %s service"
)

var (
	controllerGK = slinkyv1beta1.ControllerGVK.GroupKind()
	nodeSetGK    = slinkyv1beta1.NodeSetGVK.GroupKind()
	restApiGK    = slinkyv1beta1.RestApiGVK.GroupKind()
	slurmSpec    = field.NewPath("spec")

	// clusterNameRE keeps ClusterName one slurm.conf token that is also a
	// valid path element (it names slurmctld's state directory).
	clusterNameRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$`)

	// reservedConfigFiles are written by the operator; a user copy would
	// collide with them in /etc/slurm.
	reservedConfigFiles = []string{"slurm.conf", "slurmdbd.conf"}
	// knownConfigFiles are the files Slurm reads from /etc/slurm by name.
	knownConfigFiles = []string{
		"acct_gather.conf", "burst_buffer.conf", "cgroup.conf", "cli_filter.lua", "gres.conf",
		"helpers.conf", "job_container.conf", "job_submit.lua", "mpi.conf", "namespace.yaml",
		"oci.conf", "plugstack.conf", "topology.conf", "topology.yaml",
	}
)

func setupSlurm(mgr ctrl.Manager, opts Options) error {
	if err := ctrl.NewWebhookManagedBy(mgr, &slinkyv1beta1.Controller{}).
		WithValidator(&ControllerValidator{Reader: opts.Reader}).
		Complete(); err != nil {
		return err
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &slinkyv1beta1.NodeSet{}).
		WithValidator(&NodeSetValidator{}).
		Complete(); err != nil {
		return err
	}
	return ctrl.NewWebhookManagedBy(mgr, &slinkyv1beta1.RestApi{}).
		WithValidator(&RestApiValidator{}).
		Complete()
}

// ControllerValidator validates Controllers.
type ControllerValidator struct {
	// Reader reads the ConfigMaps named in configFileRefs.
	Reader client.Reader
}

var _ admission.Validator[*slinkyv1beta1.Controller] = (*ControllerValidator)(nil)

// ValidateCreate implements admission.Validator.
func (v *ControllerValidator) ValidateCreate(ctx context.Context, c *slinkyv1beta1.Controller) (admission.Warnings, error) {
	warnings, errs, err := v.validate(ctx, c)
	if err != nil {
		return warnings, err
	}
	errs = append(errs, unsupportedControllerFields(c)...)
	// Checked on create only: ClusterName cannot change, and a Controller
	// Slinky admitted (its webhook checks no format) keeps taking edits.
	if name := c.Spec.ClusterName; name != "" && !clusterNameRE.MatchString(name) {
		errs = append(errs, field.Invalid(slurmSpec.Child("clusterName"), name,
			"must consist of alphanumeric characters, '.', '_' or '-', and start and end with an alphanumeric character"))
	}
	if name := c.ClusterName(); len(name) > maxClusterNameLength {
		errs = append(errs, field.Invalid(slurmSpec.Child("clusterName"), name, fmt.Sprintf(
			"ClusterName exceeds %d characters (%d); when clusterName is empty it is <namespace>_<name>", maxClusterNameLength, len(name))))
	}
	return warnings, invalid(controllerGK, c.Name, errs)
}

// ValidateUpdate implements admission.Validator: what slurmctld and its
// StatefulSet were built with cannot change.
func (v *ControllerValidator) ValidateUpdate(ctx context.Context, oldC, newC *slinkyv1beta1.Controller) (admission.Warnings, error) {
	if beingDeleted(newC) {
		return nil, nil
	}
	warnings, errs, err := v.validate(ctx, newC)
	if err != nil {
		return warnings, err
	}
	if specChanged(oldC.Spec, newC.Spec) {
		errs = append(errs, unsupportedControllerFields(newC)...)
	}
	if newC.ClusterName() != oldC.ClusterName() {
		errs = append(errs, field.Invalid(slurmSpec.Child("clusterName"), newC.ClusterName(),
			"cannot change ClusterName after deployment (Slurm state and accounting are keyed by it)"))
	}
	if keyName(newC.Spec.SlurmKeyRef) != keyName(oldC.Spec.SlurmKeyRef) {
		errs = append(errs, field.Invalid(slurmSpec.Child("slurmKeyRef", "name"), keyName(newC.Spec.SlurmKeyRef),
			"cannot change SlurmKeyRef after deployment"))
	}
	if !equality.Semantic.DeepEqual(newC.Spec.EffectiveJwtKeyRef(), oldC.Spec.EffectiveJwtKeyRef()) {
		errs = append(errs, field.Forbidden(slurmSpec.Child("jwtKeyRef"),
			"the value of JwtKeyRef or JwtHs256KeyRef cannot be modified after deployment"))
	}
	// The state volume is a StatefulSet volumeClaimTemplate or claim, which
	// a StatefulSet update cannot change.
	persistence := slurmSpec.Child("persistence")
	if newC.Spec.Persistence.IsEnabled() != oldC.Spec.Persistence.IsEnabled() {
		errs = append(errs, field.Invalid(persistence.Child("enabled"), newC.Spec.Persistence.IsEnabled(),
			"cannot change persistence.enabled after deployment"))
	} else if newC.Spec.Persistence.IsEnabled() && (newC.Spec.Persistence.ExistingClaim == "") != (oldC.Spec.Persistence.ExistingClaim == "") {
		// One existing claim for another is a volume of the pod template,
		// which an update changes (Slinky refuses only enabled).
		errs = append(errs, field.Invalid(persistence.Child("existingClaim"), newC.Spec.Persistence.ExistingClaim,
			"cannot switch between persistence.existingClaim and a claim Gantry makes after deployment"))
	}
	return warnings, invalid(controllerGK, newC.Name, errs)
}

// ValidateDelete implements admission.Validator.
func (v *ControllerValidator) ValidateDelete(context.Context, *slinkyv1beta1.Controller) (admission.Warnings, error) {
	return nil, nil
}

func (v *ControllerValidator) validate(ctx context.Context, c *slinkyv1beta1.Controller) (admission.Warnings, field.ErrorList, error) {
	var warnings admission.Warnings
	var errs field.ErrorList
	// Unlike upstream, a ConfigMap that does not exist yet is admitted: the
	// Controller reports it in its Ready condition until it appears.
	for i, ref := range c.Spec.ConfigFileRefs {
		cm := &corev1.ConfigMap{}
		if err := v.Reader.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: ref.Name}, cm); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, nil, apierrors.NewInternalError(fmt.Errorf("reading ConfigMap %s: %w", ref.Name, err))
		}
		files := slices.Sorted(maps.Keys(cm.Data))
		files = append(files, slices.Sorted(maps.Keys(cm.BinaryData))...)
		for _, file := range files {
			switch {
			case slices.Contains(reservedConfigFiles, file):
				errs = append(errs, field.Invalid(slurmSpec.Child("configFileRefs").Index(i).Child("name"), ref.Name,
					fmt.Sprintf("the configFile is reserved for slurm-operator use: %s", file)))
			case !slices.Contains(knownConfigFiles, file):
				warnings = append(warnings, fmt.Sprintf("the configFile is unknown to Slurm, make sure to include it in another config file otherwise it is ignored: %s", file))
			}
		}
	}
	if len(c.Spec.Service.Spec.ExternalIPs) > 0 {
		warnings = append(warnings, fmt.Sprintf(externalIPsWarning, "controller"))
	}
	return warnings, errs, nil
}

func keyName(ref *corev1.SecretKeySelector) string {
	if ref == nil {
		return ""
	}
	return ref.Name
}

// NodeSetValidator validates NodeSets.
type NodeSetValidator struct{}

var _ admission.Validator[*slinkyv1beta1.NodeSet] = (*NodeSetValidator)(nil)

// ValidateCreate implements admission.Validator.
func (v *NodeSetValidator) ValidateCreate(_ context.Context, n *slinkyv1beta1.NodeSet) (admission.Warnings, error) {
	errs := append(validateNodeSet(n), unsupportedNodeSetFields(n)...)
	return nil, invalid(nodeSetGK, n.Name, errs)
}

// ValidateUpdate implements admission.Validator.
func (v *NodeSetValidator) ValidateUpdate(_ context.Context, oldN, newN *slinkyv1beta1.NodeSet) (admission.Warnings, error) {
	if beingDeleted(newN) {
		return nil, nil
	}
	errs := validateNodeSet(newN)
	if specChanged(oldN.Spec, newN.Spec) {
		errs = append(errs, unsupportedNodeSetFields(newN)...)
	}
	if newN.Spec.ControllerRef != oldN.Spec.ControllerRef {
		errs = append(errs, field.Invalid(slurmSpec.Child("controllerRef"), newN.Spec.ControllerRef,
			"cannot change controllerRef after deployment"))
	}
	if !equality.Semantic.DeepEqual(newN.Spec.VolumeClaimTemplates, oldN.Spec.VolumeClaimTemplates) {
		errs = append(errs, field.Forbidden(slurmSpec.Child("volumeClaimTemplates"),
			"cannot change volumeClaimTemplates after deployment"))
	}
	return nil, invalid(nodeSetGK, newN.Name, errs)
}

// ValidateDelete implements admission.Validator.
func (v *NodeSetValidator) ValidateDelete(context.Context, *slinkyv1beta1.NodeSet) (admission.Warnings, error) {
	return nil, nil
}

func validateNodeSet(n *slinkyv1beta1.NodeSet) field.ErrorList {
	var errs field.ErrorList
	if n.Spec.ControllerRef.Name == "" {
		errs = append(errs, field.Required(slurmSpec.Child("controllerRef", "name"), "controllerRef.name must not be empty"))
	}
	if r := n.Spec.Replicas; r != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*r), slurmSpec.Child("replicas"))...)
	}
	errs = append(errs, validateMaxUnavailable(n.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable)...)
	if n.Spec.Ssh.Enabled && n.Spec.Ssh.SssdConfRef.Name == "" {
		errs = append(errs, field.Required(slurmSpec.Child("ssh", "sssdConfRef", "name"), "must be set when ssh is enabled"))
	}
	if hostname := n.Spec.Template.Spec.Hostname; hostname != "" {
		msgs := apivalidation.NameIsDNSSubdomain(hostname, true)
		if len(msgs) == 0 {
			// NameIsDNSSubdomain's prefix rule masks the last two
			// characters of "x-", so " -" passed; the prefix without its
			// dashes must be a DNS label itself (it names the NodeSet's
			// Slurm nodes).
			msgs = validation.IsDNS1123Label(strings.TrimRight(hostname, "-"))
		}
		for _, msg := range msgs {
			errs = append(errs, field.Invalid(slurmSpec.Child("template", "spec", "hostname"), hostname, msg))
		}
	}
	errs = append(errs, validateSlurmdExtraConf(n.Spec.ExtraConf)...)
	if cfg := n.Spec.Partition.Config; strings.ContainsAny(cfg, "\r\n") {
		errs = append(errs, field.Invalid(slurmSpec.Child("partition", "config"), cfg,
			"must be a single line: it is appended to the partition's line in slurm.conf"))
	} else if extraconf.ContinuesLine(cfg) {
		errs = append(errs, field.Invalid(slurmSpec.Child("partition", "config"), cfg,
			"must not end in an odd number of backslashes: slurmctld would join the next line of slurm.conf to the partition's"))
	}
	return errs
}

// validateMaxUnavailable: zero would stall every rolling update.
func validateMaxUnavailable(mu *intstr.IntOrString) field.ErrorList {
	if mu == nil {
		return nil
	}
	p := slurmSpec.Child("updateStrategy", "rollingUpdate", "maxUnavailable")
	switch mu.Type {
	case intstr.Int:
		if mu.IntVal < 1 {
			return field.ErrorList{field.Invalid(p, mu.IntVal, "must be greater than 0")}
		}
	case intstr.String:
		if msgs := validation.IsValidPercent(mu.StrVal); len(msgs) > 0 {
			return field.ErrorList{field.Invalid(p, mu.StrVal, strings.Join(msgs, "; "))}
		}
		pct, _ := strconv.Atoi(strings.TrimSuffix(mu.StrVal, "%"))
		if pct < 1 || pct > 100 {
			return field.ErrorList{field.Invalid(p, mu.StrVal, "must be a percentage between 1% and 100%")}
		}
	}
	return nil
}

// validateSlurmdExtraConf checks the slurmd --conf value: Key=Value items
// separated by spaces. The operator passes it through a shell inside single
// quotes, so a quote would end the argument early.
func validateSlurmdExtraConf(conf string) field.ErrorList {
	p := slurmSpec.Child("extraConf")
	if strings.Contains(conf, "'") {
		return field.ErrorList{field.Invalid(p, conf, "must not contain a single quote (')")}
	}
	for item := range strings.FieldsSeq(conf) {
		if key, _, ok := strings.Cut(item, "="); !ok || key == "" {
			return field.ErrorList{field.Invalid(p, conf, fmt.Sprintf("malformed item %q: expected Key=Value", item))}
		}
	}
	return nil
}

// RestApiValidator validates RestApis.
type RestApiValidator struct{}

var _ admission.Validator[*slinkyv1beta1.RestApi] = (*RestApiValidator)(nil)

// ValidateCreate implements admission.Validator.
func (v *RestApiValidator) ValidateCreate(_ context.Context, r *slinkyv1beta1.RestApi) (admission.Warnings, error) {
	warnings, errs := validateRestApi(r)
	return warnings, invalid(restApiGK, r.Name, errs)
}

// ValidateUpdate implements admission.Validator. Upstream lets controllerRef
// change; Gantry keeps it fixed like a NodeSet's: the RestApi reconciler
// publishes the Slurm client NodeSets use under the Controller it serves
// and does not withdraw it from a previous one.
func (v *RestApiValidator) ValidateUpdate(_ context.Context, oldR, newR *slinkyv1beta1.RestApi) (admission.Warnings, error) {
	if beingDeleted(newR) {
		return nil, nil
	}
	warnings, errs := validateRestApi(newR)
	if newR.Spec.ControllerRef != oldR.Spec.ControllerRef {
		errs = append(errs, field.Invalid(slurmSpec.Child("controllerRef"), newR.Spec.ControllerRef,
			"cannot change controllerRef after deployment"))
	}
	return warnings, invalid(restApiGK, newR.Name, errs)
}

// ValidateDelete implements admission.Validator.
func (v *RestApiValidator) ValidateDelete(context.Context, *slinkyv1beta1.RestApi) (admission.Warnings, error) {
	return nil, nil
}

func validateRestApi(r *slinkyv1beta1.RestApi) (admission.Warnings, field.ErrorList) {
	var warnings admission.Warnings
	var errs field.ErrorList
	if r.Spec.ControllerRef.Name == "" {
		errs = append(errs, field.Required(slurmSpec.Child("controllerRef", "name"), "controllerRef.name must not be empty"))
	}
	if n := ptr.Deref(r.Spec.Replicas, 0); n < 0 {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(n), slurmSpec.Child("replicas"))...)
	}
	if len(r.Spec.Service.Spec.ExternalIPs) > 0 {
		warnings = append(warnings, fmt.Sprintf(externalIPsWarning, "restapi"))
	}
	return warnings, errs
}
