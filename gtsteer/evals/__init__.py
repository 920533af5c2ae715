"""gtsteer.evals: the measurements behind `gtsteer eval steering` and `gtsteer eval judge`,
with no file, no Ray and no progress display of their own.

A steering accuracy says whether a model does what an instruction asks, but only through a
*steering classifier*, which reads one message and says which value of an action key it shows;
never called a judge, the verdict game's word (docs/DESIGN.md, "One meaning per name").

One job per module, as `gtsteer.checks` is for conformance:
- `prompts`: the classifier prompts and the variants (without / with the config's
  instruction definitions);
- `calibration`: contextual calibration on content-free messages (Zhao et al. 2021);
- `classifiers`: the steering classifiers (calibrated likelihoods, pairwise, embeddings, the
  domain's exact parse) and their command-line spellings;
- `validation`: a classifier on hand-labelled messages and the refusal rule;
- `steering`: the summary of classified messages (accuracy per instruction, base rates,
  confusion matrices);
- `paired`, `reward`, `verdict`: the statistics of the paired comparisons (`werewolf
  evaluate`, `evaluate`, the lab's `werewolf-heldout`), of `eval reward` and of `eval verdict`.

The drivers in `gtsteer.runs` (`eval_steering`, `eval_judge`) generate the messages, read the
labelled file, run batches serially or on Ray and write the reports; they import from here.
"""
