//! `mnemos eval …`: the evaluation commands.

use anyhow::Result;
use clap::Subcommand;

use crate::GlobalArgs;

#[derive(Subcommand)]
pub enum EvalCommand {
    /// Recall@{1,5,10}, MRR, nDCG@10 and latency of BM25 / dense / hybrid retrieval.
    Retrieval(crate::eval_retrieval::EvalRetrievalArgs),
    /// ROC AUC of the offline arousal, surprise and importance scores against LUFY's labels;
    /// with --presets, the importance agreement of what each preset keeps (LUFY Table 12).
    Lufy(crate::eval_lufy::EvalLufyArgs),
    /// Accuracy, per-class F1 and latency of the semantic/episodic query classifier.
    Classifier(crate::eval_classifier::EvalClassifierArgs),
    /// Presets side by side on one dataset conversation: latency, memory size, evidence in context.
    Presets(crate::eval_presets::EvalPresetsArgs),
    /// MemBench's protocol (streaming, scenarios, noise, checkpoints) with presets side by
    /// side: recall through provenance, choice accuracy, answers, cost; --out writes a report.
    Run(Box<crate::eval_run::EvalRunArgs>),
    /// MOOM's memory-extraction score on ZH-4O or LoCoMo: derived memories against human
    /// labels (ROUGE-L, ROUGE-2, embedding similarity), presets side by side.
    Extraction(Box<crate::eval_extraction::EvalExtractionArgs>),
    /// ZH-4O's probes: plant a fact, ask about it hundreds of messages later; hit rate by
    /// provenance and answer similarity, presets side by side.
    Probes(Box<crate::eval_probes::EvalProbesArgs>),
}

pub fn run(global: &GlobalArgs, command: EvalCommand) -> Result<()> {
    match command {
        EvalCommand::Retrieval(args) => crate::eval_retrieval::run(&global.config()?, args),
        EvalCommand::Lufy(args) if args.presets.is_some() => {
            crate::eval_lufy::run_presets(&global.config()?, args)
        }
        EvalCommand::Lufy(args) => crate::eval_lufy::run(args),
        EvalCommand::Classifier(args) => crate::eval_classifier::run(&global.config()?, args),
        EvalCommand::Presets(args) => crate::eval_presets::run(&global.config()?, args),
        EvalCommand::Run(args) => crate::eval_run::run(&global.config()?, *args),
        EvalCommand::Extraction(args) => crate::eval_extraction::run(&global.config()?, *args),
        EvalCommand::Probes(args) => crate::eval_probes::run(&global.config()?, *args),
    }
}
