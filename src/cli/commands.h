/* The subcommands of amdnn-onnx; each takes the arguments after its name
 * (argv[0] is the subcommand) and returns the process exit code. */
#ifndef AMD_COMMANDS_H
#define AMD_COMMANDS_H

int amd_cmd_info(int argc, char **argv);
int amd_cmd_run(int argc, char **argv);
int amd_cmd_lut(int argc, char **argv);
int amd_cmd_grad(int argc, char **argv);
int amd_cmd_train(int argc, char **argv);
int amd_cmd_eval(int argc, char **argv);
int amd_cmd_bench(int argc, char **argv);
int amd_cmd_sweep(int argc, char **argv);

#endif
