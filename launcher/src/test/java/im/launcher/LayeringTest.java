package im.launcher;

import static com.tngtech.archunit.base.DescribedPredicate.not;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAPackage;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAnyPackage;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.junit.AnalyzeClasses;
import com.tngtech.archunit.junit.ArchTest;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.CompositeArchRule;
import java.util.Set;

/**
 * The module table of docs/architecture.md ("Modules: what runs where") as rules over the main
 * classes of every module on this test class path: each module's package root may use only the
 * modules the table draws arrows to (directly or through theirs), {@code protocol} nothing of ours,
 * no package cycles, no main class of the test kit. The launcher sees every module but
 * {@code reliability}, {@code bench} and {@code examples} (nothing depends on them), so their rows
 * are not checked here.
 */
@AnalyzeClasses(packages = "im", importOptions = ImportOption.DoNotIncludeTests.class)
class LayeringTest {
    /** docs/architecture.md's module table: the one drawing of the graph (ModuleGraphTest holds it against the poms). */
    private static final ModuleTable TABLE = ModuleTable.read();

    @ArchTest
    static final ArchRule everyClassOfOursBelongsToAModuleOfTheTable = classes().that().resideInAPackage("im..")
            .should().resideInAnyPackage(TABLE.rows().values().stream().map(m -> m.packageRoot() + "..").toArray(String[]::new))
            .because("a new module gets its row in docs/architecture.md's module table before its code");

    @ArchTest
    static final ArchRule eachModuleUsesOnlyWhatTheTableDraws = CompositeArchRule.of(
            TABLE.rows().keySet().stream().map(LayeringTest::usesOnlyWhatTheTableDraws).toList());

    @ArchTest
    static final ArchRule protocolDependsOnNothingOfOurs = noClasses().that().resideInAPackage("im.protocol..")
            .should().dependOnClassesThat(resideInAPackage("im..").and(not(resideInAPackage("im.protocol.."))))
            .because("the wire frames are shared by the server and the SDKs");

    @ArchTest
    static final ArchRule noPackageCycles = slices().matching("im.(**)").should().beFreeOfCycles();

    @ArchTest
    static final ArchRule noMainClassUsesTheTestKit = noClasses().that().resideOutsideOfPackage("im.testkit..")
            .should().dependOnClassesThat().resideInAPackage("im.testkit..")
            .because("the test kit is a test-scope dependency only");

    private static ArchRule usesOnlyWhatTheTableDraws(String module) {
        Set<String> reach = TABLE.reachableFrom(module);
        String[] allowed = reach.stream().map(m -> TABLE.rows().get(m).packageRoot() + "..").toArray(String[]::new);
        return noClasses().that().resideInAPackage(TABLE.rows().get(module).packageRoot() + "..")
                .should().dependOnClassesThat(resideInAPackage("im..").and(not(resideInAnyPackage(allowed))))
                .as("module " + module + " uses only " + String.join(", ", reach))
                .allowEmptyShould(true);   // reliability, bench, examples: not on this class path
    }
}
